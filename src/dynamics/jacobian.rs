//! Body and point Jacobians: the map from generalized velocities to a body's spatial
//! velocity, or to a point's linear velocity (Featherstone 2008, §8.1, eq. 8.4:
//! column k is the motion subspace of dof k carried to the chosen frame).

use super::Data;
use crate::error::{Error, Result};
use crate::math::{Motion, Vec3, SE3};
use crate::Model;
use nalgebra::{Matrix3xX, Matrix6xX};

/// The frame in which a body Jacobian expresses spatial velocities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReferenceFrame {
    /// The body frame: `[ω; v]` in body coordinates, v the velocity of the body origin.
    Local,
    /// World axes at the world origin (spatial velocity in the classical sense).
    World,
    /// World axes at the body origin: `[ω; v]`, v the velocity of the body origin.
    LocalWorldAligned,
}

/// The 6×nv Jacobian of body `body`'s spatial velocity, after forward kinematics.
pub fn body_jacobian(model: &Model, data: &Data, body: usize, frame: ReferenceFrame) -> Result<Matrix6xX<f64>> {
    check_body(model, body)?;
    Ok(jacobian_at(model, data, body, &data.x_world[body], frame))
}

/// The world pose of frame `frame` ([`Model::frames`]: a body's link or a link merged
/// into a body), after forward kinematics.
pub fn frame_pose(model: &Model, data: &Data, frame: usize) -> Result<SE3> {
    let f = model.frames().get(frame).ok_or_else(|| {
        Error::InvalidInput(format!("frame index {frame} out of range (model has {} frames)", model.frames().len()))
    })?;
    Ok(data.x_world[f.body] * f.placement)
}

/// The 6×nv Jacobian of the spatial velocity of frame `frame` ([`Model::frames`]), after
/// forward kinematics: the body Jacobian of the body carrying it, expressed at the
/// frame (`Local`: frame axes and origin; `LocalWorldAligned`: world axes at the
/// frame's origin; `World`: the body's, a rigid attachment changes nothing).
pub fn frame_jacobian(model: &Model, data: &Data, frame: usize, rf: ReferenceFrame) -> Result<Matrix6xX<f64>> {
    let x = frame_pose(model, data, frame)?;
    Ok(jacobian_at(model, data, model.frames()[frame].body, &x, rf))
}

/// The Jacobian of body `body`'s motion expressed at the frame with world pose `xb`
/// rigidly attached to it.
fn jacobian_at(model: &Model, data: &Data, body: usize, xb: &SE3, frame: ReferenceFrame) -> Matrix6xX<f64> {
    let mut jac = Matrix6xX::zeros(model.nv());
    let mut j = Some(body);
    while let Some(b) = j {
        let (va, nv) = (model.v_idx[b], model.joints[b].nv());
        for k in va..va + nv {
            let w = data.x_world[b].act_motion(&data.s[k]);
            let col = match frame {
                ReferenceFrame::World => w,
                ReferenceFrame::Local => xb.inv_act_motion(&w),
                ReferenceFrame::LocalWorldAligned => Motion::new(w.ang, w.lin + w.ang.cross(&xb.trans)),
            };
            jac.column_mut(k).copy_from(&col.to_vector());
        }
        j = model.parents[b];
    }
    jac
}

/// The 3×nv Jacobian of the world-frame linear velocity of a point fixed to body
/// `body` (given in body coordinates), after forward kinematics.
pub fn point_jacobian(model: &Model, data: &Data, body: usize, point: &Vec3) -> Result<Matrix3xX<f64>> {
    check_body(model, body)?;
    if !point.iter().all(|x| x.is_finite()) {
        return Err(Error::NonFinite { what: "point", index: 0, value: point.norm() });
    }
    let p = data.x_world[body].act_point(point);
    let mut jac = Matrix3xX::zeros(model.nv());
    let mut j = Some(body);
    while let Some(b) = j {
        let (va, nv) = (model.v_idx[b], model.joints[b].nv());
        for k in va..va + nv {
            let w = data.x_world[b].act_motion(&data.s[k]);
            jac.column_mut(k).copy_from(&(w.lin + w.ang.cross(&p)));
        }
        j = model.parents[b];
    }
    Ok(jac)
}

fn check_body(model: &Model, body: usize) -> Result<()> {
    if body >= model.nbodies() {
        return Err(Error::InvalidInput(format!(
            "body index {body} out of range (model has {} bodies)",
            model.nbodies()
        )));
    }
    Ok(())
}

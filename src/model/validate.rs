//! Model validation: finite values, joint parameter shapes, unit axes, and
//! physically valid inertias (positive mass on moving rigid groups, symmetric
//! positive-definite rotational inertia satisfying the triangle inequality).

use super::{JointType, Model};
use crate::error::ModelError;
use crate::math::{Inertia, Mat3};

/// Relative tolerance for symmetry and the triangle inequality.
const TOL: f64 = 1e-9;

/// Validates and normalises a freshly assembled model.
/// With `allow_massless`, a moving rigid group without mass is accepted when its subtree
/// has mass ([`crate::ModelBuilder::allow_massless_moving_links`]).
pub(crate) fn validate(mut model: Model, allow_massless: bool) -> Result<Model, ModelError> {
    if !model.gravity.iter().all(|x| x.is_finite()) {
        return Err(ModelError::NonFinite { what: "gravity".into() });
    }
    for joint in &mut model.joints {
        let name = joint.name.clone();
        let finite = |xs: &[f64]| xs.iter().all(|x| x.is_finite());
        if !joint.placement.is_finite() {
            return Err(ModelError::NonFinite { what: format!("placement of joint '{name}'") });
        }
        let rot = joint.placement.rot;
        if (rot.transpose() * rot - Mat3::identity()).abs().max() > 1e-6 || rot.determinant() < 0.0 {
            return Err(ModelError::InvalidJoint {
                joint: name,
                reason: "placement rotation is not a rotation matrix".into(),
            });
        }
        normalise_axes(&mut joint.kind, &name)?;
        if let JointType::Screw { pitch, .. } = joint.kind {
            if !pitch.is_finite() {
                return Err(ModelError::NonFinite { what: format!("pitch of joint '{name}'") });
            }
        }
        let (nq, nv) = (joint.nq(), joint.nv());
        let d = &joint.dynamics;
        let l = &joint.limits;
        for (what, xs, n) in [
            ("damping", &d.damping, nv),
            ("stiffness", &d.stiffness, nv),
            ("armature", &d.armature, nv),
            ("friction", &d.friction, nv),
            ("velocity limit", &l.velocity, nv),
            ("effort limit", &l.effort, nv),
            ("spring rest position", &d.rest, nq),
            ("lower position limit", &l.lower, nq),
            ("upper position limit", &l.upper, nq),
        ] {
            if xs.len() != n {
                return Err(ModelError::InvalidJoint {
                    joint: name,
                    reason: format!("{what} has {} entries, expected {n}", xs.len()),
                });
            }
            if xs.iter().any(|x| x.is_nan()) {
                return Err(ModelError::NonFinite { what: format!("{what} of joint '{name}'") });
            }
        }
        if !finite(&d.damping)
            || !finite(&d.stiffness)
            || !finite(&d.armature)
            || !finite(&d.friction)
            || !finite(&d.rest)
        {
            return Err(ModelError::NonFinite { what: format!("dynamics of joint '{name}'") });
        }
        for (what, xs) in [
            ("damping", &d.damping),
            ("stiffness", &d.stiffness),
            ("armature", &d.armature),
            ("friction", &d.friction),
            ("velocity limit", &l.velocity),
            ("effort limit", &l.effort),
        ] {
            if xs.iter().any(|&x| x < 0.0) {
                return Err(ModelError::InvalidJoint { joint: name, reason: format!("negative {what}") });
            }
        }
        if l.lower.iter().zip(&l.upper).any(|(lo, hi)| lo > hi) {
            return Err(ModelError::InvalidJoint {
                joint: name,
                reason: "lower position limit above upper limit".into(),
            });
        }
    }
    for body in &model.bodies {
        check_inertia(&body.name, &body.inertia)?;
    }
    // Every moving rigid group (a body with degrees of freedom plus the bodies welded
    // to it) must have positive mass and a positive-definite rotational inertia.
    let nb = model.bodies.len();
    let mut group: Vec<Inertia> = model.bodies.iter().map(|b| b.inertia).collect();
    for i in (0..nb).rev() {
        if model.joints[i].nv() == 0 {
            if let Some(p) = model.parents[i] {
                let g = group[i].transformed(&model.joints[i].placement);
                group[p] += g;
            }
        }
    }
    // The mass of each body's subtree.
    let mut subtree: Vec<f64> = model.bodies.iter().map(|b| b.inertia.mass).collect();
    for i in (0..nb).rev() {
        if let Some(p) = model.parents[i] {
            subtree[p] += subtree[i];
        }
    }
    for i in 0..nb {
        if model.joints[i].nv() == 0 {
            continue;
        }
        let what = format!("moving link '{}' and the links welded to it", model.bodies[i].name);
        if allow_massless && group[i].mass == 0.0 {
            if subtree[i] <= 0.0 {
                return Err(ModelError::InvalidMass {
                    what: format!("moving link '{}' and every link below it", model.bodies[i].name),
                    mass: subtree[i],
                    reason: "a moving subtree needs positive mass",
                });
            }
            continue;
        }
        if group[i].mass <= 0.0 {
            return Err(ModelError::InvalidMass {
                what,
                mass: group[i].mass,
                reason: "a moving rigid group needs positive mass",
            });
        }
        let moments = principal_moments(&group[i].inertia_about_com());
        if moments[0] <= 0.0 {
            return Err(ModelError::InvalidInertia {
                link: model.bodies[i].name.clone(),
                reason: "positive definite (with the links welded to it)",
                moments,
            });
        }
    }
    model.has_springs = model.stiffness.iter().any(|&k| k != 0.0);
    Ok(model)
}

fn normalise_axes(kind: &mut JointType, joint: &str) -> Result<(), ModelError> {
    let axes: Vec<&mut crate::math::Vec3> = match kind {
        JointType::Revolute { axis }
        | JointType::Continuous { axis }
        | JointType::Prismatic { axis }
        | JointType::Screw { axis, .. } => vec![axis],
        JointType::Planar { normal } => vec![normal],
        JointType::Universal { axis1, axis2 } => vec![axis1, axis2],
        _ => vec![],
    };
    for a in axes {
        if !a.iter().all(|x| x.is_finite()) {
            return Err(ModelError::NonFinite { what: format!("axis of joint '{joint}'") });
        }
        let n = a.norm();
        if n < 1e-12 {
            return Err(ModelError::ZeroAxis { joint: joint.into() });
        }
        // Leave unit axes bit-for-bit unchanged so that rebuilding a model is idempotent.
        if (n - 1.0).abs() > 4.0 * f64::EPSILON {
            *a /= n;
        }
    }
    if let JointType::Universal { axis1, axis2 } = kind {
        if axis1.cross(axis2).norm() < 1e-9 {
            return Err(ModelError::InvalidJoint {
                joint: joint.into(),
                reason: "universal joint axes are parallel".into(),
            });
        }
    }
    Ok(())
}

/// Sorted eigenvalues of a symmetric 3×3 matrix.
fn principal_moments(i: &Mat3) -> [f64; 3] {
    let e = i.symmetric_eigenvalues();
    let mut m = [e[0], e[1], e[2]];
    m.sort_by(|a, b| a.total_cmp(b));
    m
}

pub(crate) fn check_inertia(link: &str, inertia: &Inertia) -> Result<(), ModelError> {
    if !inertia.is_finite() {
        return Err(ModelError::NonFinite { what: format!("inertia of link '{link}'") });
    }
    let m = inertia.mass;
    if m < 0.0 {
        return Err(ModelError::InvalidMass {
            what: format!("link '{link}'"),
            mass: m,
            reason: "mass must not be negative",
        });
    }
    let ic = inertia.inertia_about_com();
    let scale = ic.abs().max().max(f64::MIN_POSITIVE);
    let moments = principal_moments(&ic);
    if (ic - ic.transpose()).abs().max() > TOL * scale {
        return Err(ModelError::InvalidInertia { link: link.into(), reason: "symmetric", moments });
    }
    if m == 0.0 {
        if ic.abs().max() > 0.0 {
            return Err(ModelError::InvalidInertia { link: link.into(), reason: "zero for a massless link", moments });
        }
        return Ok(());
    }
    if moments[0] <= 0.0 {
        return Err(ModelError::InvalidInertia { link: link.into(), reason: "positive definite", moments });
    }
    if moments[0] + moments[1] < moments[2] * (1.0 - TOL) {
        return Err(ModelError::TriangleInequality { link: link.into(), moments });
    }
    Ok(())
}

//! Static geometry of a [`super::World`]: shapes fixed in the world, with no degrees of
//! freedom (a contact side that is `Static`).

use super::system::{InputGradients, System, SystemStep};
use crate::collision::{Material, ShapeCore, ShapeInstance, ShapeKind};
use crate::error::{Error, Result};
use crate::math::{Force, SE3};
use nalgebra::Matrix6xX;

/// Shapes fixed in the world.
#[derive(Clone, Debug, Default)]
pub struct StaticGeometry {
    shapes: Vec<ShapeInstance>,
}

impl StaticGeometry {
    /// Static shapes; each shape's [`ShapeInstance::local`] is its world pose (its `body`
    /// is ignored). Errors: a non-finite pose or radius.
    pub fn new(shapes: Vec<ShapeInstance>) -> Result<StaticGeometry> {
        for (i, s) in shapes.iter().enumerate() {
            if !(s.local.is_finite() && s.radius.is_finite() && s.radius >= 0.0) {
                return Err(Error::InvalidInput(format!("static shape {i}: non-finite pose or radius")));
            }
        }
        let shapes = shapes.into_iter().map(|s| ShapeInstance { body: None, ..s }).collect();
        Ok(StaticGeometry { shapes })
    }

    /// The ground: the half-space `z ≤ 0` of the world.
    pub fn ground(material: Material) -> StaticGeometry {
        StaticGeometry {
            shapes: vec![ShapeInstance {
                body: None,
                index_on_body: 0,
                local: SE3::identity(),
                core: ShapeCore::HalfSpace,
                radius: 0.0,
                kind: ShapeKind::Plane,
                material,
                group: 1,
                mask: u32::MAX,
            }],
        }
    }
}

impl System for StaticGeometry {
    fn name(&self) -> String {
        format!("{} static shapes", self.shapes.len())
    }

    fn nq(&self) -> usize {
        0
    }

    fn nv(&self) -> usize {
        0
    }

    fn nu(&self) -> usize {
        0
    }

    fn shapes(&self) -> &[ShapeInstance] {
        &self.shapes
    }

    fn shape_element(&self, _shape: usize) -> Option<usize> {
        None
    }

    fn num_elements(&self) -> usize {
        0
    }

    fn element_pose(&self, _q: &[f64], element: usize) -> Result<SE3> {
        Err(Error::InvalidInput(format!("static geometry has no elements (asked for element {element})")))
    }

    fn self_collides(&self, _a: usize, _b: usize) -> bool {
        false
    }

    fn retract(&self, _q: &[f64], _dq: &[f64], _out: &mut [f64]) {}

    fn difference(&self, _q0: &[f64], _q1: &[f64], _out: &mut [f64]) {}

    fn check(&self, q: &[f64], v: &[f64], u: &[f64]) -> Result<()> {
        for (what, x) in [("static q", q), ("static v", v), ("static u", u)] {
            if !x.is_empty() {
                return Err(Error::Dimension { what, expected: 0, got: x.len() });
            }
        }
        Ok(())
    }

    fn begin_step(&self, _q: &[f64], _v: &[f64], _u: &[f64], _h: f64) -> Result<Box<dyn SystemStep>> {
        Ok(Box::new(StaticStep { poses: self.shapes.iter().map(|s| s.local).collect() }))
    }
}

/// [`StaticGeometry`] in a step: the shapes' poses.
#[derive(Clone, Debug)]
struct StaticStep {
    poses: Vec<SE3>,
}

impl SystemStep for StaticStep {
    fn free_velocity(&self) -> &[f64] {
        &[]
    }

    fn shape_pose(&self, shape: usize) -> SE3 {
        self.poses[shape]
    }

    fn element_pose(&self, _element: usize) -> SE3 {
        SE3::identity()
    }

    fn element_jacobian(&self, _element: usize) -> Matrix6xX<f64> {
        Matrix6xX::zeros(0)
    }

    fn solve_mass(&self, _x: &mut [f64]) {}

    fn integrate(&self, _v_next: &[f64], _q_next: &mut [f64]) {}

    fn free_velocity_vjp(&self, _g: &[f64], _grad: &mut InputGradients) -> Result<()> {
        Ok(())
    }

    fn mass_vjp(&self, _: &[f64], _: &[f64], _: &mut InputGradients) -> Result<()> {
        Ok(())
    }

    fn element_velocity_vjp(&self, _element: usize, _u: &[f64], _wrench: &Force, _grad_q: &mut [f64]) {}

    fn integrate_vjp(&self, _: &[f64], _: &[f64], _: &mut [f64], _: &mut [f64], _: &mut [f64]) {}
}

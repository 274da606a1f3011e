//! The loaders' inertia policy (docs/models.md, "Loading policy"): what a robot file's
//! `<inertial>` may get away with, and how it is made physical.
//!
//! Robot files from the wild print inertias rounded to a few digits, so a thin rod's
//! tensor can have an eigenvalue of −2e−22 or break the triangle inequality
//! `I₁ + I₂ ≥ I₃` by a part in 10⁴; links with mass are written with a zero tensor
//! (only the mass was known); frames are written with a tiny tensor and no mass. The
//! loaders (not [`crate::ModelBuilder`], which stays strict) repair these with a warning
//! that names the link and the change, unless the caller asked for `strict` loading:
//!
//! * negative principal moments within [`CLAMP_RTOL`] of the largest are raised to
//!   `CLAMP_RTOL`·largest (positive definite, the triangle inequality re-checked);
//! * a violation of the triangle inequality by at most [`PROJECT_RTOL`] of the largest
//!   moment is projected onto it: the principal moments move by `t·(1, 1, −1)`,
//!   `t = (I₃ − I₁ − I₂)/3`, the Euclidean projection onto the half-space
//!   `I₁ + I₂ ≥ I₃` (principal axes kept);
//! * a link with mass and an all-zero tensor (up to [`NEGLIGIBLE`]) gets the tensor of a solid body of its mass
//!   shaped like its first primitive collision geometry (box, sphere, cylinder; a
//!   capsule as a cylinder of its full length), or, without one, of a solid sphere of
//!   the density of water;
//! * a tensor still not physical after these — a negative principal moment beyond
//!   rounding, or a gross violation of the triangle inequality (the "simple" robot
//!   descriptions give a base link `(3e−12, 3e−12, 3e−6)`) — is replaced by the nearest
//!   physical one in second moments: with principal moments `λ₁ ≤ λ₂ ≤ λ₃`, the mass
//!   distribution's second moments along the principal axes are
//!   `s_i = (λ_j + λ_k − λ_i)/2`; a physical tensor has `s ≥ 0`, and clamping the negative
//!   ones (to [`CLAMP_RTOL`] of the largest) is the Frobenius-nearest positive
//!   semi-definite second-moment matrix `Σ = ½ tr(I) 1 − I` (principal axes kept);
//!   back, `λ_i = s_j + s_k`. The warning gives both sets of moments: such a change is
//!   not rounding, and the file's author should fix the link;
//! * a link without mass keeps no rotational inertia (a massless frame).
//!
//! A tensor with no positive second moment at all (negative definite) is left for the
//! model's validation, which reports it as an error.

use crate::math::{Inertia, Mat3, Vec3};
use crate::model::Geometry;

/// Relative size (against the largest principal moment) below which a negative
/// principal moment counts as rounding and is clamped.
pub const CLAMP_RTOL: f64 = 1e-6;

/// Relative size (against the largest principal moment) up to which a violation of the
/// triangle inequality counts as rounding and is projected away.
pub const PROJECT_RTOL: f64 = 1e-2;

/// A tensor whose entries are all below `NEGLIGIBLE·m` (kg·m², `m` the link's mass in kg:
/// the inertia of the mass spread over a micrometre) is taken as the zero tensor of a
/// file that gave only the mass, printed with rounding (`ixz="1.35525e-20"`).
pub const NEGLIGIBLE: f64 = 1e-12;

/// True when the rotational inertia `ic` of a link of `mass` is zero up to
/// [`NEGLIGIBLE`]: only the mass was known.
pub fn is_negligible(mass: f64, ic: &Mat3) -> bool {
    mass > 0.0 && ic.iter().all(|x| x.abs() <= NEGLIGIBLE * mass)
}

/// Density (kg/m³) of the sphere given to a link with mass, a zero tensor and no
/// primitive collision geometry.
pub const FALLBACK_DENSITY: f64 = 1000.0;

/// The rotational inertia about the centre of mass made physical where it is only
/// rounding away from it (see the module docs), with a description of the change
/// (`None` when nothing changed). Tensors further off are returned unchanged.
pub fn repair_rotational(mass: f64, ic: &Mat3) -> (Mat3, Option<String>) {
    if mass.is_nan() || mass <= 0.0 || !ic.iter().all(|x| x.is_finite()) {
        return (*ic, None);
    }
    let sym = (ic + ic.transpose()) * 0.5;
    let eig = sym.symmetric_eigen();
    let mut order = [0usize, 1, 2];
    order.sort_by(|&a, &b| eig.eigenvalues[a].total_cmp(&eig.eigenvalues[b]));
    let mut lambda = Vec3::new(eig.eigenvalues[order[0]], eig.eigenvalues[order[1]], eig.eigenvalues[order[2]]);
    let largest = lambda[2];
    if largest <= 0.0 {
        return (*ic, None);
    }
    let before = lambda;
    let mut changes = vec![];
    let floor = CLAMP_RTOL * largest;
    if lambda[0] < floor && lambda[0] >= -floor {
        for k in 0..2 {
            lambda[k] = lambda[k].max(floor);
        }
        changes.push("a principal moment at zero or rounding below it raised");
    }
    let excess = lambda[2] - lambda[0] - lambda[1];
    if excess > 0.0 && lambda[0] > 0.0 && excess <= PROJECT_RTOL * largest {
        let t = excess / 3.0;
        lambda += Vec3::new(t, t, -t);
        changes.push("projected onto the triangle inequality");
    }
    if !is_physical(&lambda) {
        let s = second_moments(&lambda);
        let largest_s = s.max();
        if largest_s > 0.0 {
            let floor = CLAMP_RTOL * largest_s;
            let s = s.map(|x| x.max(floor));
            lambda = Vec3::new(s[1] + s[2], s[0] + s[2], s[0] + s[1]);
            changes.push(
                "not a physical inertia (a negative principal moment, or the triangle inequality broken beyond \
                 rounding): replaced by the nearest physical one in second moments",
            );
        }
    }
    if changes.is_empty() {
        return (*ic, None);
    }
    let mut d = Mat3::zeros();
    let mut v = Mat3::zeros();
    for (k, &i) in order.iter().enumerate() {
        d[(k, k)] = lambda[k];
        v.set_column(k, &eig.eigenvectors.column(i));
    }
    let fixed = v * d * v.transpose();
    let note = format!(
        "{} (principal moments {:.6e}, {:.6e}, {:.6e} -> {:.6e}, {:.6e}, {:.6e})",
        changes.join("; "),
        before[0],
        before[1],
        before[2],
        lambda[0],
        lambda[1],
        lambda[2]
    );
    (fixed, Some(note))
}

/// Whether sorted principal moments are those of a mass distribution: positive, and
/// `λ₁ + λ₂ ≥ λ₃` up to the model validation's relative tolerance.
fn is_physical(lambda: &Vec3) -> bool {
    lambda[0] > 0.0 && lambda[0] + lambda[1] >= lambda[2] * (1.0 - 1e-9)
}

/// The second moments `s_i = (λ_j + λ_k − λ_i)/2` along the principal axes.
fn second_moments(lambda: &Vec3) -> Vec3 {
    let t = 0.5 * (lambda[0] + lambda[1] + lambda[2]);
    Vec3::new(t - lambda[0], t - lambda[1], t - lambda[2])
}

/// The rotational inertia (link frame, about the centre of mass) of a solid body of
/// `mass` shaped like `geometry` turned by `rotation` (the shape's pose in the link), with
/// the shape's name, or `None` for shapes without a closed form here (plane, mesh).
pub fn solid_rotational(mass: f64, geometry: &Geometry, rotation: &Mat3) -> Option<(Mat3, &'static str)> {
    let (solid, name) = match geometry {
        Geometry::Box { half_extents } => (Inertia::solid_box(mass, half_extents * 2.0), "box"),
        Geometry::Sphere { radius } => (Inertia::solid_sphere(mass, *radius), "sphere"),
        Geometry::Cylinder { radius, length } => (Inertia::solid_cylinder(mass, *radius, *length), "cylinder"),
        Geometry::Capsule { radius, length } => {
            (Inertia::solid_cylinder(mass, *radius, length + 2.0 * radius), "capsule")
        }
        _ => return None,
    };
    let local = solid.inertia_about_com();
    Some((rotation * local * rotation.transpose(), name))
}

/// The rotational inertia of a solid sphere of `mass` at [`FALLBACK_DENSITY`].
pub fn fallback_rotational(mass: f64) -> Mat3 {
    let radius = (3.0 * mass / (4.0 * std::f64::consts::PI * FALLBACK_DENSITY)).cbrt();
    Inertia::solid_sphere(mass, radius).inertia_about_com()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(m: &Mat3) -> [f64; 3] {
        let e = m.symmetric_eigenvalues();
        let mut v = [e[0], e[1], e[2]];
        v.sort_by(|a, b| a.total_cmp(b));
        v
    }

    #[test]
    fn physical_tensors_are_left_alone() {
        let i = Mat3::new(0.2, 0.01, 0.0, 0.01, 0.3, 0.02, 0.0, 0.02, 0.4);
        assert_eq!(repair_rotational(1.0, &i), (i, None));
        assert_eq!(repair_rotational(0.0, &Mat3::zeros()), (Mat3::zeros(), None));
    }

    #[test]
    fn rounding_below_zero_is_clamped() {
        // A thin rod along x, printed with −2e−22 for its axial moment.
        let i = Mat3::from_diagonal(&Vec3::new(-2e-22, 0.1, 0.1));
        let (fixed, note) = repair_rotational(1.0, &i);
        let m = moments(&fixed);
        assert!((m[0] - 1e-7).abs() < 1e-20 && (m[1] - 0.1).abs() < 1e-15 && (m[2] - 0.1).abs() < 1e-15, "{m:?}");
        assert!(note.unwrap().contains("raised"));
        // Further below zero: not rounding; replaced by the nearest physical tensor in
        // second moments. λ = (−1e−3, 0.1, 0.1): s = (0.1005, −0.0005, −0.0005) → clamped
        // to 1e−6·0.1005, so λ ≈ (2.01e−7, 0.1005, 0.1005).
        let bad = Mat3::from_diagonal(&Vec3::new(-1e-3, 0.1, 0.1));
        let (fixed, note) = repair_rotational(1.0, &bad);
        let m = moments(&fixed);
        let floor = 1e-6 * 0.1005;
        for (a, b) in m.iter().zip([2.0 * floor, 0.1005 + floor, 0.1005 + floor]) {
            assert!((a - b).abs() < 1e-15, "{m:?}");
        }
        assert!(note.unwrap().contains("nearest physical"));
        // Negative definite: no mass distribution is near; left for the validation.
        assert_eq!(repair_rotational(1.0, &Mat3::from_diagonal(&Vec3::new(-0.1, -0.2, -0.3))).1, None);
    }

    #[test]
    fn near_violations_of_the_triangle_inequality_are_projected() {
        // Turned by a rotation, so the principal axes must be kept.
        let r = crate::math::SE3::from_axis_angle(&Vec3::new(1.0, 2.0, 3.0).normalize(), 0.7).rot;
        let i = r * Mat3::from_diagonal(&Vec3::new(0.1, 0.2, 0.3004)) * r.transpose();
        let (fixed, note) = repair_rotational(2.0, &i);
        let m = moments(&fixed);
        assert!((m[0] + m[1] - m[2]).abs() < 1e-14, "{m:?}");
        // The projection: each moment moved by 0.0004/3 toward the boundary.
        let t = 0.0004 / 3.0;
        for (a, b) in m.iter().zip([0.1 + t, 0.2 + t, 0.3004 - t]) {
            assert!((a - b).abs() < 1e-14, "{m:?}");
        }
        // Principal axes kept: the change commutes with the original tensor.
        let c = fixed * i - i * fixed;
        assert!(c.abs().max() < 1e-14, "{c}");
        assert!(note.unwrap().contains("triangle"));
        // A gross violation: the nearest physical tensor in second moments, axes kept.
        // λ = (0.1, 0.1, 0.3): s = (0.15, 0.15, −0.05) → (0.15, 0.15, 1.5e−7), so
        // λ = (0.15 + 1.5e−7, 0.15 + 1.5e−7, 0.3).
        let far = r * Mat3::from_diagonal(&Vec3::new(0.1, 0.1, 0.3)) * r.transpose();
        let (fixed, note) = repair_rotational(1.0, &far);
        let m = moments(&fixed);
        for (a, b) in m.iter().zip([0.15 + 1.5e-7, 0.15 + 1.5e-7, 0.3]) {
            assert!((a - b).abs() < 1e-14, "{m:?}");
        }
        assert!(m[0] + m[1] >= m[2]);
        let c = fixed * far - far * fixed;
        assert!(c.abs().max() < 1e-14, "{c}");
        assert!(note.unwrap().contains("nearest physical"));
        // The "simple" descriptions' base link.
        let base = Mat3::from_diagonal(&Vec3::new(3e-12, 3e-12, 3e-6));
        let m = moments(&repair_rotational(10.0, &base).0);
        assert!(m[0] + m[1] >= m[2] && (m[2] - 3e-6).abs() < 1e-15 && (m[0] - 1.5e-6).abs() < 1e-11, "{m:?}");
    }

    #[test]
    fn solids_and_the_fallback_sphere() {
        let (b, name) =
            solid_rotational(12.0, &Geometry::Box { half_extents: Vec3::new(0.5, 1.0, 1.5) }, &Mat3::identity())
                .unwrap();
        assert_eq!(name, "box");
        assert!((b - Mat3::from_diagonal(&Vec3::new(13.0, 10.0, 5.0))).abs().max() < 1e-12, "{b}");
        let s = fallback_rotational(4.0 / 3.0 * std::f64::consts::PI);
        // Radius 0.1 m at 1000 kg/m³: 0.4 m r².
        assert!((s[(0, 0)] - 0.4 * 4.0 / 3.0 * std::f64::consts::PI * 0.01).abs() < 1e-12, "{s}");
        assert!(solid_rotational(1.0, &Geometry::Plane, &Mat3::identity()).is_none());
        let rounded = Mat3::new(0.0, 0.0, 1.35525e-20, 0.0, 0.0, 0.0, 1.35525e-20, 0.0, 0.0);
        assert!(is_negligible(0.2675, &rounded) && is_negligible(1.0, &Mat3::zeros()));
        assert!(!is_negligible(1.0, &Mat3::from_diagonal_element(1e-9)) && !is_negligible(0.0, &Mat3::zeros()));
    }
}

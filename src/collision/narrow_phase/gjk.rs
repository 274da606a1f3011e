//! Distance and closest points of two disjoint convex cores: the
//! Gilbert–Johnson–Keerthi algorithm (Gilbert, Johnson & Keerthi, IEEE J. Robotics
//! and Automation 4(2), 1988) on the Minkowski difference P − Q.
//!
//! The iterate v is the point of the current simplex (≤ 4 points `w = p − q` of
//! P − Q) nearest the origin. Each step adds the support point `w = s_P(−v) − s_Q(v)`;
//! `v·w/|v|` is a lower bound of the distance and |v| an upper bound, so the loop stops
//! when they agree to a relative 1e-14, when the support point is already in the
//! simplex (exact termination on polytopes), or when |v| stops decreasing. The point
//! of a simplex nearest the origin is found by trying each of its faces (subsets of
//! its points): the minimum over their affine hulls, kept when its barycentric
//! coordinates are positive, and the smallest such point wins — the nearest point of
//! the simplex lies in the relative interior of exactly one face, and every face's
//! candidate belongs to the simplex. The closest points of P and Q are the same
//! barycentric combinations of the simplex's support points of P and of Q.

use super::Placed;
use crate::math::Vec3;

/// Closest points of two disjoint cores (core surfaces, radii not included).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Closest {
    /// The point of P nearest to Q.
    pub p: Vec3,
    /// The point of Q nearest to P.
    pub q: Vec3,
    /// Their distance.
    pub distance: f64,
}

#[derive(Clone, Copy, Debug, Default)]
struct SimplexPoint {
    w: Vec3,
    p: Vec3,
    q: Vec3,
    ip: usize,
    iq: usize,
}

#[derive(Clone, Copy, Debug, Default)]
struct Simplex {
    pts: [SimplexPoint; 4],
    lambda: [f64; 4],
    n: usize,
}

impl Simplex {
    fn point(&self) -> Vec3 {
        (0..self.n).map(|k| self.pts[k].w * self.lambda[k]).sum()
    }
}

/// The point of the affine hull of `ys` nearest the origin and its barycentric
/// coordinates, or `None` when the points are affinely dependent.
fn affine_min(ys: &[Vec3]) -> Option<(Vec3, [f64; 4])> {
    let mut lam = [0.0; 4];
    match ys.len() {
        1 => {
            lam[0] = 1.0;
            Some((ys[0], lam))
        }
        2 => {
            let d = ys[1] - ys[0];
            let dd = d.dot(&d);
            if !(dd > 1e-28 * ys[0].norm_squared().max(ys[1].norm_squared())) {
                return None;
            }
            let t = -d.dot(&ys[0]) / dd;
            lam[0] = 1.0 - t;
            lam[1] = t;
            Some((ys[0] + d * t, lam))
        }
        3 => {
            let (d1, d2) = (ys[1] - ys[0], ys[2] - ys[0]);
            let (g11, g12, g22) = (d1.dot(&d1), d1.dot(&d2), d2.dot(&d2));
            let det = g11 * g22 - g12 * g12;
            if !(det > 1e-24 * g11 * g22) {
                return None;
            }
            let (r1, r2) = (-d1.dot(&ys[0]), -d2.dot(&ys[0]));
            let m1 = (r1 * g22 - r2 * g12) / det;
            let m2 = (g11 * r2 - g12 * r1) / det;
            lam[0] = 1.0 - m1 - m2;
            lam[1] = m1;
            lam[2] = m2;
            Some((ys[0] + d1 * m1 + d2 * m2, lam))
        }
        4 => {
            let (d1, d2, d3) = (ys[1] - ys[0], ys[2] - ys[0], ys[3] - ys[0]);
            let det = d1.dot(&d2.cross(&d3));
            if !(det.abs() > 1e-12 * d1.norm() * d2.norm() * d3.norm()) {
                return None;
            }
            let r = -ys[0];
            let m1 = r.dot(&d2.cross(&d3)) / det;
            let m2 = d1.dot(&r.cross(&d3)) / det;
            let m3 = d1.dot(&d2.cross(&r)) / det;
            lam[0] = 1.0 - m1 - m2 - m3;
            lam[1] = m1;
            lam[2] = m2;
            lam[3] = m3;
            Some((Vec3::zeros(), lam))
        }
        _ => None,
    }
}

/// The face of `s` holding its point nearest the origin, as a new simplex.
fn nearest_face(s: &Simplex) -> Simplex {
    let mut best = Simplex::default();
    let mut best_d = f64::INFINITY;
    let mut ys = [Vec3::zeros(); 4];
    let mut idx = [0usize; 4];
    for mask in 1u32..(1 << s.n) {
        let mut k = 0;
        for (i, pt) in s.pts.iter().enumerate().take(s.n) {
            if mask & (1 << i) != 0 {
                ys[k] = pt.w;
                idx[k] = i;
                k += 1;
            }
        }
        let Some((x, lam)) = affine_min(&ys[..k]) else { continue };
        if k > 1 && lam[..k].iter().any(|&l| !(l > 0.0)) {
            continue;
        }
        let d = x.norm_squared();
        if d < best_d {
            best_d = d;
            best.n = k;
            for j in 0..k {
                best.pts[j] = s.pts[idx[j]];
                best.lambda[j] = lam[j];
            }
        }
    }
    best
}

/// Closest points of P and Q, or `None` when they intersect or touch (distance below
/// 1e-14 of their size) or the iteration fails.
pub(crate) fn closest_points(p: &Placed, q: &Placed) -> Option<Closest> {
    let scale = p.poly.bounding_radius + q.poly.bounding_radius + (p.center() - q.center()).norm();
    let mut d0 = q.center() - p.center();
    if !(d0.norm_squared() > 0.0) {
        d0 = Vec3::x();
    }
    let (ip, pp) = p.support(&d0);
    let (iq, qq) = q.support(&-d0);
    let mut s = Simplex::default();
    s.pts[0] = SimplexPoint { w: pp - qq, p: pp, q: qq, ip, iq };
    s.lambda[0] = 1.0;
    s.n = 1;
    let mut v = s.pts[0].w;
    let max_iter = 32 + 2 * (p.poly.vertices.len() + q.poly.vertices.len());
    for _ in 0..max_iter {
        let vv = v.norm_squared();
        if !(vv > (1e-14 * scale).powi(2)) {
            return None;
        }
        let (ip, pp) = p.support(&-v);
        let (iq, qq) = q.support(&v);
        let w = pp - qq;
        if vv - v.dot(&w) <= 1e-14 * vv {
            break;
        }
        if s.pts[..s.n].iter().any(|x| x.ip == ip && x.iq == iq) {
            break;
        }
        let mut grown = s;
        grown.pts[grown.n] = SimplexPoint { w, p: pp, q: qq, ip, iq };
        grown.n += 1;
        let next = nearest_face(&grown);
        if next.n == 4 {
            return None; // the origin is inside: the cores intersect
        }
        let nv = next.point();
        if !(nv.norm_squared() < vv) {
            break;
        }
        s = next;
        v = nv;
    }
    let cp: Vec3 = (0..s.n).map(|k| s.pts[k].p * s.lambda[k]).sum();
    let cq: Vec3 = (0..s.n).map(|k| s.pts[k].q * s.lambda[k]).sum();
    let distance = (cp - cq).norm();
    if !distance.is_finite() {
        return None;
    }
    Some(Closest { p: cp, q: cq, distance })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::polytope::Polytope;
    use crate::math::{SplitMix64, SE3};
    use nalgebra::UnitQuaternion;

    /// Two unit cubes: the distance along random directions matches the separation
    /// of the box corners computed by hand along the axes.
    #[test]
    fn cube_distances() {
        let cube = Polytope::cuboid(&Vec3::new(0.5, 0.5, 0.5));
        let a = Placed { poly: &cube, pose: SE3::identity(), radius: 0.0 };
        // face-face, edge-edge and vertex-vertex separations of axis-aligned cubes
        for (off, want) in [
            (Vec3::new(1.7, 0.2, -0.1), 0.7),
            (Vec3::new(1.5, 1.5, 0.3), 0.5f64.hypot(0.5)),
            (Vec3::new(1.2, 1.3, 1.4), (0.04f64 + 0.09 + 0.16).sqrt()),
        ] {
            let b = Placed { poly: &cube, pose: SE3::from_translation(off), radius: 0.0 };
            let c = closest_points(&a, &b).unwrap();
            assert!((c.distance - want).abs() < 1e-13, "{off:?}: {} vs {want}", c.distance);
            assert!(((c.q - c.p).norm() - want).abs() < 1e-13);
        }
        // overlap → None
        let b = Placed { poly: &cube, pose: SE3::from_translation(Vec3::new(0.9, 0.1, 0.0)), radius: 0.0 };
        assert!(closest_points(&a, &b).is_none());
        // a rotated cube: distance is at least its support gap along any axis
        let mut rng = SplitMix64::new(1);
        for _ in 0..100 {
            let q = rng.unit_quaternion();
            let rot = UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(q[0], q[1], q[2], q[3]));
            let off = Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize() * 2.0;
            let b = Placed { poly: &cube, pose: SE3::new(*rot.to_rotation_matrix().matrix(), off), radius: 0.0 };
            let c = closest_points(&a, &b).unwrap();
            let n = (c.q - c.p) / c.distance;
            // (c.p, c.q) realise the distance and n separates: sep(n) = distance
            let sep = -b.support(&-n).1.dot(&-n) - a.support(&n).1.dot(&n);
            assert!((sep - c.distance).abs() < 1e-12, "{sep} vs {}", c.distance);
        }
    }
}

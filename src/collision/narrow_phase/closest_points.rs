//! Closest points between points, segments and lines, and the overlap of parallel
//! segments — the elementary searches behind sphere and capsule contacts and the
//! validity checks of edge–edge contacts.
//!
//! Segments are `a + s·u`, `s ∈ [0, 1]`. For two segments the squared distance
//! `|a₁ + s u₁ − a₂ − t u₂|²` is a convex quadratic in (s, t); with
//! `A = u₁·u₁, B = u₁·u₂, C = u₂·u₂, D = u₁·(a₁ − a₂), E = u₂·(a₁ − a₂)` its
//! unconstrained minimum (the closest points of the two lines) is
//! `s = (B E − C D)/(A C − B²)`, `t = (A E − B D)/(A C − B²)`. On the square
//! [0, 1]², for a fixed s the best t is `(B s + E)/C`; so the constrained minimum is
//! found by clamping s, computing t from it, and — when t had to be clamped —
//! recomputing s from the clamped t (`s = (B t − D)/A`, clamped), which is exact
//! because the objective is convex and separable along the clamped edge.

use crate::math::Vec3;

/// Parameters `(s, t)` of the mutually closest points of the lines `a₁ + s u₁` and
/// `a₂ + t u₂`, or `None` when they are parallel (`|u₁ × u₂| ≤ sin_tol |u₁||u₂|`).
pub(crate) fn line_line(a1: &Vec3, u1: &Vec3, a2: &Vec3, u2: &Vec3, sin_tol: f64) -> Option<(f64, f64)> {
    let cross = u1.cross(u2).norm();
    if !(cross > sin_tol * u1.norm() * u2.norm()) {
        return None;
    }
    let w = a1 - a2;
    let (a, b, c) = (u1.dot(u1), u1.dot(u2), u2.dot(u2));
    let (d, e) = (u1.dot(&w), u2.dot(&w));
    let den = a * c - b * b;
    Some(((b * e - c * d) / den, (a * e - b * d) / den))
}

/// Parameter in [0, 1] of the point of the segment `a + s u` closest to `p`.
pub(crate) fn point_segment(p: &Vec3, a: &Vec3, u: &Vec3) -> f64 {
    let uu = u.dot(u);
    if !(uu > 0.0) {
        return 0.0;
    }
    ((p - a).dot(u) / uu).clamp(0.0, 1.0)
}

/// Parameters `(s, t)` in [0, 1]² of the closest points of two non-parallel segments
/// (see the module documentation), or `None` when they are parallel within `sin_tol`.
pub(crate) fn segment_segment(a1: &Vec3, u1: &Vec3, a2: &Vec3, u2: &Vec3, sin_tol: f64) -> Option<(f64, f64)> {
    let cross = u1.cross(u2).norm();
    if !(cross > sin_tol * u1.norm() * u2.norm()) {
        return None;
    }
    let w = a1 - a2;
    let (a, b, c) = (u1.dot(u1), u1.dot(u2), u2.dot(u2));
    let (d, e) = (u1.dot(&w), u2.dot(&w));
    let den = a * c - b * b;
    let mut s = ((b * e - c * d) / den).clamp(0.0, 1.0);
    let mut t = (b * s + e) / c;
    if t < 0.0 {
        t = 0.0;
        s = (-d / a).clamp(0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = ((b - d) / a).clamp(0.0, 1.0);
    }
    Some((s, t))
}

/// An end of the overlap of two parallel segments: which segment's endpoint it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OverlapEnd {
    /// Endpoint k (0: `a₁`, 1: `a₁ + u₁`) of the first segment, facing the second segment's interior.
    First(usize),
    /// Endpoint k of the second segment, facing the first segment's interior.
    Second(usize),
}

/// How two parallel segments face each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parallel {
    /// Their projections on the common direction overlap: the two ends of the overlap.
    Overlap([OverlapEnd; 2]),
    /// They do not overlap: the nearest endpoints (k₁ of the first, k₂ of the second).
    Ends(usize, usize),
}

/// The overlap of the projections of two (parallel) segments on the first one's
/// direction; overlaps shorter than `tol` (a length) count as touching ends.
pub(crate) fn parallel_overlap(a1: &Vec3, u1: &Vec3, a2: &Vec3, u2: &Vec3, tol: f64) -> Parallel {
    let len = u1.norm();
    let dir = u1 / len;
    let t0 = (a2 - a1).dot(&dir);
    let t1 = t0 + u2.dot(&dir);
    // the second segment's endpoints in increasing order along dir
    let (lo_b, k_lo, hi_b, k_hi) = if t0 <= t1 { (t0, 0, t1, 1) } else { (t1, 1, t0, 0) };
    let lo = lo_b.max(0.0);
    let hi = hi_b.min(len);
    if hi - lo > tol {
        let lo_end = if lo_b >= 0.0 { OverlapEnd::Second(k_lo) } else { OverlapEnd::First(0) };
        let hi_end = if hi_b <= len { OverlapEnd::Second(k_hi) } else { OverlapEnd::First(1) };
        Parallel::Overlap([lo_end, hi_end])
    } else if lo_b > len - tol {
        Parallel::Ends(1, k_lo)
    } else {
        Parallel::Ends(0, k_hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SplitMix64;

    fn rv(rng: &mut SplitMix64) -> Vec3 {
        Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0))
    }

    /// The clamped solution against a dense grid search of the distance.
    #[test]
    fn segment_segment_matches_grid_search() {
        let mut rng = SplitMix64::new(3);
        for _ in 0..200 {
            let (a1, u1, a2, u2) = (rv(&mut rng), rv(&mut rng), rv(&mut rng), rv(&mut rng));
            let (s, t) = segment_segment(&a1, &u1, &a2, &u2, 1e-9).unwrap();
            let d = (a1 + u1 * s - a2 - u2 * t).norm();
            let n = 400;
            let mut best = f64::INFINITY;
            for i in 0..=n {
                let s = i as f64 / n as f64;
                // for fixed s the best t is a clamped projection
                let p = a1 + u1 * s;
                let t = point_segment(&p, &a2, &u2);
                best = best.min((p - a2 - u2 * t).norm());
            }
            assert!(d <= best + 1e-12, "{d} > {best}");
            assert!(best - d < 1e-4);
        }
    }

    #[test]
    fn parallel_overlap_ends() {
        let a1 = Vec3::zeros();
        let u1 = Vec3::new(2.0, 0.0, 0.0);
        let a2 = Vec3::new(1.5, 1.0, 0.0);
        // second segment reversed, from x = 1.5 down to x = -0.5
        let u2 = Vec3::new(-2.0, 0.0, 0.0);
        assert_eq!(
            parallel_overlap(&a1, &u1, &a2, &u2, 1e-12),
            Parallel::Overlap([OverlapEnd::First(0), OverlapEnd::Second(0)])
        );
        let a2 = Vec3::new(3.0, 1.0, 0.0);
        assert_eq!(
            parallel_overlap(&a1, &u1, &a2, &u2, 1e-12),
            Parallel::Overlap([OverlapEnd::Second(1), OverlapEnd::First(1)])
        );
        let a2 = Vec3::new(5.0, 1.0, 0.0);
        assert_eq!(parallel_overlap(&a1, &u1, &a2, &u2, 1e-12), Parallel::Ends(1, 1));
        let a2 = Vec3::new(-1.0, 1.0, 0.0);
        assert_eq!(parallel_overlap(&a1, &u1, &a2, &u2, 1e-12), Parallel::Ends(0, 0));
    }
}

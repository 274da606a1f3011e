//! Exact orientation predicate for points in 3D: the sign of
//! `det [b − a; c − a; d − a] = ((b − a) × (c − a)) · (d − a)`, i.e. on which side of the
//! plane through `a, b, c` (oriented by the counter-clockwise normal) the point `d` lies.
//!
//! The determinant is first evaluated in floating point with a forward error bound
//! (Shewchuk, "Adaptive precision floating-point arithmetic and fast robust geometric
//! predicates", 1997, §4.3: `|det − fl(det)| ≤ (7 + 56ε) ε · permanent`; we use the
//! looser `16 ε · permanent`). When the rounded value is too small to decide, it is
//! recomputed exactly with floating-point expansions (§2 of that paper: `TwoSum`,
//! `TwoProduct` (through a fused multiply–add), `Grow-Expansion`), whose largest
//! component has the sign of the exact value. The result is exact for all finite inputs
//! whose products neither overflow nor underflow (|coordinates| between about 1e-70 and
//! 1e70 apart from zeros).
//!
//! The convex-hull builder ([`super::hull`]) takes every visibility decision with this
//! predicate, so its triangulation is topologically consistent whatever the rounding.

use crate::math::Vec3;

/// Sign (−1, 0 or +1) of `((b − a) × (c − a)) · (d − a)`: +1 when `d` lies in front of the
/// triangle `a, b, c` (on the side its counter-clockwise normal points to), −1 behind,
/// 0 when the four points are exactly coplanar.
pub fn orient3d(a: &Vec3, b: &Vec3, c: &Vec3, d: &Vec3) -> i32 {
    // Translate so that d is the origin (as Shewchuk does): det[a−d; b−d; c−d] is the
    // opposite of det[b−a; c−a; d−a].
    let (adx, ady, adz) = (a.x - d.x, a.y - d.y, a.z - d.z);
    let (bdx, bdy, bdz) = (b.x - d.x, b.y - d.y, b.z - d.z);
    let (cdx, cdy, cdz) = (c.x - d.x, c.y - d.y, c.z - d.z);
    let bc = bdx * cdy - cdx * bdy;
    let ca = cdx * ady - adx * cdy;
    let ab = adx * bdy - bdx * ady;
    let det = adz * bc + bdz * ca + cdz * ab;
    let permanent = ((bdx * cdy).abs() + (cdx * bdy).abs()) * adz.abs()
        + ((cdx * ady).abs() + (adx * cdy).abs()) * bdz.abs()
        + ((adx * bdy).abs() + (bdx * ady).abs()) * cdz.abs();
    let bound = 16.0 * f64::EPSILON * permanent;
    if det > bound {
        return -1;
    }
    if -det > bound {
        return 1;
    }
    -sign_of(&exact_det(a, b, c, d))
}

/// The normal `(b − a) × (c − a)` of triangle `a, b, c`, each component computed exactly
/// with expansions and then rounded: accurate to a few ulps even for a needle or a
/// sliver, whose plane the plain floating-point cross product gets wrong by up to
/// `ε · |b − a| · |c − a|` in every component.
pub fn cross_accurate(a: &Vec3, b: &Vec3, c: &Vec3) -> Vec3 {
    let u = [0, 1, 2].map(|k| two_diff(b[k], a[k]));
    let v = [0, 1, 2].map(|k| two_diff(c[k], a[k]));
    let component = |i: usize, j: usize| -> f64 {
        let e = sum(&mul(&u[i], &v[j]), &negate(&mul(&u[j], &v[i])));
        e.iter().sum()
    };
    Vec3::new(component(1, 2), component(2, 0), component(0, 1))
}

/// `det[a − d; b − d; c − d]` as a nonoverlapping expansion (increasing magnitude).
fn exact_det(a: &Vec3, b: &Vec3, c: &Vec3, d: &Vec3) -> Vec<f64> {
    let diff = |p: &Vec3, k: usize| -> Vec<f64> { two_diff(p[k], d[k]) };
    let (ax, ay, az) = (diff(a, 0), diff(a, 1), diff(a, 2));
    let (bx, by, bz) = (diff(b, 0), diff(b, 1), diff(b, 2));
    let (cx, cy, cz) = (diff(c, 0), diff(c, 1), diff(c, 2));
    // 2×2 minors of the x, y columns
    let bc = sum(&mul(&bx, &cy), &negate(&mul(&cx, &by)));
    let ca = sum(&mul(&cx, &ay), &negate(&mul(&ax, &cy)));
    let ab = sum(&mul(&ax, &by), &negate(&mul(&bx, &ay)));
    sum(&sum(&mul(&az, &bc), &mul(&bz, &ca)), &mul(&cz, &ab))
}

/// Sign of an expansion: that of its largest (last nonzero) component.
fn sign_of(e: &[f64]) -> i32 {
    match e.iter().rev().find(|&&x| x != 0.0) {
        Some(&x) if x > 0.0 => 1,
        Some(_) => -1,
        None => 0,
    }
}

/// `a + b = s + e` exactly, with `s = fl(a + b)` (Knuth's TwoSum).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bv = s - a;
    let av = s - bv;
    (s, (a - av) + (b - bv))
}

/// `a − b` as an expansion of at most two components.
fn two_diff(a: f64, b: f64) -> Vec<f64> {
    let (s, e) = two_sum(a, -b);
    compact(vec![e, s])
}

/// `a · b = p + e` exactly, with `p = fl(a · b)` (the fused multiply–add computes the
/// rounding error exactly).
fn two_product(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}

/// Removes zero components (keeps a single zero for the zero expansion).
fn compact(mut e: Vec<f64>) -> Vec<f64> {
    e.retain(|&x| x != 0.0);
    if e.is_empty() {
        e.push(0.0);
    }
    e
}

/// `e + b` (Grow-Expansion with zero elimination): nonoverlapping and increasing in
/// magnitude when `e` is.
fn grow(e: &[f64], b: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(e.len() + 1);
    let mut q = b;
    for &x in e {
        let (s, err) = two_sum(q, x);
        if err != 0.0 {
            out.push(err);
        }
        q = s;
    }
    if q != 0.0 || out.is_empty() {
        out.push(q);
    }
    out
}

/// `e + f` (Expansion-Sum: `f`'s components grown into `e` one by one).
fn sum(e: &[f64], f: &[f64]) -> Vec<f64> {
    let mut out = e.to_vec();
    for &x in f {
        if x != 0.0 {
            out = grow(&out, x);
        }
    }
    out
}

/// `e · f`: every exact component product `e_i f_j = p + err` summed into an expansion.
fn mul(e: &[f64], f: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0];
    for &x in e {
        for &y in f {
            let (p, err) = two_product(x, y);
            if err != 0.0 {
                out = grow(&out, err);
            }
            if p != 0.0 {
                out = grow(&out, p);
            }
        }
    }
    out
}

fn negate(e: &[f64]) -> Vec<f64> {
    e.iter().map(|x| -x).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SplitMix64;

    /// Exact determinant for points with integer coordinates (|x| < 2^26) in i128.
    fn det_i128(p: [[i64; 3]; 4]) -> i128 {
        let d = |i: usize, k: usize| (p[i][k] - p[0][k]) as i128;
        let (bx, by, bz) = (d(1, 0), d(1, 1), d(1, 2));
        let (cx, cy, cz) = (d(2, 0), d(2, 1), d(2, 2));
        let (dx, dy, dz) = (d(3, 0), d(3, 1), d(3, 2));
        // ((b−a) × (c−a)) · (d−a)
        (by * cz - bz * cy) * dx + (bz * cx - bx * cz) * dy + (bx * cy - by * cx) * dz
    }

    #[test]
    fn matches_integer_arithmetic_on_nearly_coplanar_points() {
        let mut rng = SplitMix64::new(7);
        let mut ri = |lo: i64, hi: i64| lo + (rng.next_u64() % (hi - lo + 1) as u64) as i64;
        let mut counts = [0usize; 3];
        for trial in 0..20000i32 {
            // scale: coordinates are integers times 2^-s (exact in f64)
            let s = (trial % 7) * 9 - 20;
            let big = 1i64 << 24;
            let a = [ri(-big, big), ri(-big, big), ri(-big, big)];
            let u = [ri(-4096, 4096), ri(-4096, 4096), ri(-4096, 4096)];
            let v = [ri(-4096, 4096), ri(-4096, 4096), ri(-4096, 4096)];
            let coef = [ri(-300, 300), ri(-300, 300), ri(-300, 300), ri(-300, 300)];
            let b = [0, 1, 2].map(|k| a[k] + u[k] * 7 + v[k]);
            let c = [0, 1, 2].map(|k| a[k] - u[k] * 3 + v[k] * 5);
            // d coplanar with a, b, c (integer combination), then nudged by −1, 0 or +1
            let mut d = [0, 1, 2].map(|k| a[k] + coef[0] * u[k] + coef[1] * v[k]);
            let nudge = ri(-1, 1);
            d[(trial % 3) as usize] += nudge;
            let pts = [a, b, c, d];
            let exact = det_i128(pts).signum() as i32;
            let f = |p: [i64; 3]| Vec3::new(p[0] as f64, p[1] as f64, p[2] as f64) * 2f64.powi(s);
            let got = orient3d(&f(a), &f(b), &f(c), &f(d));
            assert_eq!(got, exact, "trial {trial}: points {pts:?} scale 2^{s}");
            // the expansion arithmetic alone (not only when the filter defers to it)
            let slow = -sign_of(&exact_det(&f(a), &f(b), &f(c), &f(d)));
            assert_eq!(slow, exact, "exact path, trial {trial}");
            counts[(exact + 1) as usize] += 1;
        }
        // both signs and exact zeros occur
        assert!(counts.iter().all(|&c| c > 1000), "{counts:?}");
    }

    #[test]
    fn consistent_under_permutations_of_nearly_coplanar_points() {
        // The exact sign changes with the parity of the permutation; floating-point
        // evaluation of such inputs does not, because each ordering rounds differently.
        let mut rng = SplitMix64::new(11);
        let perms: Vec<([usize; 4], i32)> = {
            let mut out = vec![];
            for i in 0..4 {
                for j in 0..4 {
                    for k in 0..4 {
                        for l in 0..4 {
                            let p = [i, j, k, l];
                            let mut seen = [false; 4];
                            p.iter().for_each(|&x| seen[x] = true);
                            if seen.iter().all(|&s| s) {
                                let inversions = (0..4).flat_map(|a| (a + 1..4).map(move |b| (a, b)));
                                let parity = inversions.filter(|&(a, b)| p[a] > p[b]).count();
                                out.push((p, if parity % 2 == 0 { 1 } else { -1 }));
                            }
                        }
                    }
                }
            }
            out
        };
        assert_eq!(perms.len(), 24);
        let mut zero_or_close = 0;
        for _ in 0..3000 {
            let mut r = || Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
            let (a, b, c) = (r(), r() * 100.0, r() * 0.01);
            let (s, t) = (rng.range(-3.0, 3.0), rng.range(-3.0, 3.0));
            let d = a + (b - a) * s + (c - a) * t;
            let pts = [a, b, c, d];
            let base = orient3d(&a, &b, &c, &d);
            if base == 0 {
                zero_or_close += 1;
            }
            for (p, parity) in &perms {
                let got = orient3d(&pts[p[0]], &pts[p[1]], &pts[p[2]], &pts[p[3]]);
                assert_eq!(got, base * parity, "permutation {p:?} of {pts:?}");
            }
        }
        let _ = zero_or_close;
    }

    #[test]
    fn accurate_cross_product_of_slivers() {
        // integer points: the exact cross product is an integer vector
        let mut rng = SplitMix64::new(3);
        for _ in 0..2000 {
            let mut r = || (rng.next_u64() % (1 << 26)) as i64 - (1 << 25);
            let a = [r(), r(), r()];
            let u = [r() >> 8, r() >> 8, r() >> 8];
            let b = [0, 1, 2].map(|k| a[k] + 1000 * u[k]);
            // c nearly on the line a–b
            let c = [a[0] + 377 * u[0] + 1, a[1] + 377 * u[1], a[2] + 377 * u[2] - 1];
            let e1 = [0, 1, 2].map(|k| (b[k] - a[k]) as i128);
            let e2 = [0, 1, 2].map(|k| (c[k] - a[k]) as i128);
            let exact = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]];
            let scale = 2f64.powi(-30);
            let f = |p: [i64; 3]| Vec3::new(p[0] as f64, p[1] as f64, p[2] as f64) * scale;
            let got = cross_accurate(&f(a), &f(b), &f(c)) / (scale * scale);
            for k in 0..3 {
                let x = exact[k] as f64;
                assert!((got[k] - x).abs() <= 4.0 * f64::EPSILON * x.abs(), "{got:?} vs {exact:?}");
            }
        }
    }

    #[test]
    fn sign_convention() {
        let o = Vec3::zeros();
        let (x, y, z) = (Vec3::x(), Vec3::y(), Vec3::z());
        assert_eq!(orient3d(&o, &x, &y, &z), 1);
        assert_eq!(orient3d(&o, &y, &x, &z), -1);
        assert_eq!(orient3d(&o, &x, &y, &(x + y)), 0);
        // a point a hair above a plane the floating-point evaluation gets wrong
        let a = Vec3::new(0.1, 0.2, 0.3);
        let b = Vec3::new(1e8 + 0.1, 0.2, 0.3);
        let c = Vec3::new(0.1, 1e8 + 0.2, 0.3);
        let d = Vec3::new(12345.678, -9876.54321, 0.3 + 5.551115123125783e-17);
        assert_eq!(orient3d(&a, &b, &c, &d), 1);
    }
}

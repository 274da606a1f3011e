//! Generators of large, sparse, reproducible Schur systems `[J H⁻¹ Jᵀ + C] x = b` of a
//! non-smooth Newton step (Macklin et al. 2019, eq. 59; digest-000 §2, §4, §6), built
//! from synthetic but physically shaped scenes, to test and benchmark conjugate-residual
//! solvers (the CPU [`crate::solver::ncp::pcr_solve`] and the GPU one) on the same data.
//!
//! What a system is: the operator of eq. 59 multiplied through by `h`, at a cold start
//! (`u = 0`, `λ = 0`) with `H = M̃` (no geometric stiffness):
//!
//! ```text
//! [J M̃⁻¹ Jᵀ + C] (h Δλ) = −J ũ − h_rows,   C = blockdiag(E/h², S/h², W/h)
//! ```
//!
//! with `ũ` the free velocity (gravity over one step `h = 1/120 s` plus small seeded
//! velocities), `h_rows` the position errors over `h` (contact gaps `φ/h` on normal rows,
//! FEM stretch errors `(s − 1)/h`), nothing on friction rows (their `Dᵀq̇` vanishes at
//! `u = 0`; the pile puts the drift of its rigid displacements there, see
//! [`contact_pile`]). The compliances are of the paper's flavour: normal rows
//! `10⁻⁶ · A_ii` (§8.4-style regularization), friction rows a lagged frictional
//! compliance `W`, FEM stretch rows `(k V h²)⁻¹`.
//!
//! What a system is not: the output of a simulation. The scenes are laid out directly
//! (no collision detection, no settling): contact points sit on face overlaps, gaps are
//! seeded slight penetrations, and the sticking/sliding split of friction rows is drawn
//! at random. The values are plausible in size and structure, which is what a linear
//! solver sees; they are not a consistent state of any trajectory.
//!
//! Everything is deterministic: the only randomness is a hand-written splitmix64 seeded
//! by the caller, so the same arguments give bit-identical systems on every machine.
//!
//! - [`contact_pile`]: rigid boxes stacked in columns on a ground plane, neighbouring
//!   columns leaning on each other; 3 rows per contact (normal, two tangents).
//! - [`contact_ring`]: one rigid cylinder on `k` rim contacts, the paper's near-singular
//!   ring (rank ≤ 6 Delassus operator, relative compliance 10⁻¹²).
//! - [`fem_contact`]: a squashed tetrahedral box in the generalized-compliance form
//!   (three principal-stretch rows per tet, §9) resting on the ground on its bottom face.

use crate::error::{Error, Result};
use crate::math::{BlockDiagonal, CsrMatrix, SparseSchur};
use crate::math::{Mat3, Vec3};
use crate::soft::generate::box_mesh;

/// The time step of every generated system (seconds): `1/120`.
pub const TIME_STEP: f64 = 1.0 / 120.0;
/// Gravity (m/s², along `−z`).
const GRAVITY: f64 = 9.81;
/// Relative compliance of contact normal rows: `C_ii = NORMAL_COMPLIANCE · A_ii`.
pub const NORMAL_COMPLIANCE: f64 = 1e-6;
/// Relative compliance of the rows of [`contact_ring`]: `C_ii = u_i · RING_COMPLIANCE ·
/// A_ii`, `u_i` uniform in `[0, 1)`.
pub const RING_COMPLIANCE: f64 = 1e-12;
/// Relative size of the out-of-range part of [`contact_ring`]'s right-hand side.
pub const RING_OUT_OF_RANGE: f64 = 1e-5;

/// A Schur system `[J H⁻¹ Jᵀ + diag(compliance)] x = rhs`.
#[derive(Clone, Debug, PartialEq)]
pub struct SchurSystem {
    /// What generated it (generator and arguments).
    pub name: String,
    /// The Delassus part `J H⁻¹ Jᵀ`.
    pub schur: SparseSchur,
    /// The diagonal compliance `C`, one entry per row (≥ 0).
    pub compliance: Vec<f64>,
    /// The right-hand side `b`, one entry per row.
    pub rhs: Vec<f64>,
}

impl SchurSystem {
    /// The number of rows (constraint rows of `J`).
    pub fn rows(&self) -> usize {
        self.schur.j().rows()
    }

    /// The Jacobi diagonal `diag(J H⁻¹ Jᵀ) + compliance + shift`.
    pub fn jacobi_diagonal(&self, shift: f64) -> Vec<f64> {
        self.schur.diagonal().iter().zip(&self.compliance).map(|(d, c)| d + c + shift).collect()
    }
}

/// splitmix64 (Steele, Lea, Flood 2014): a tiny, seedable, portable generator.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` (53 random bits).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)`.
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

/// An orthonormal tangent pair `(t1, t2)` of the unit normal `n`, turned by `angle` about
/// `n` (so that `t1 × t2 = n`).
fn tangents(n: &Vec3, angle: f64) -> (Vec3, Vec3) {
    let helper = if n.x.abs() < 0.9 { Vec3::x() } else { Vec3::y() };
    let a = n.cross(&helper).normalize();
    let b = n.cross(&a);
    let (s, c) = angle.sin_cos();
    let t1 = a * c + b * s;
    (t1, n.cross(&t1))
}

/// A rotation about `z` by `angle`.
fn yaw(angle: f64) -> Mat3 {
    let (s, c) = angle.sin_cos();
    Mat3::new(c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0)
}

/// A rigid body of a generated scene.
struct Body {
    centre: Vec3,
    mass: f64,
    /// World-frame inverse inertia about the centre of mass.
    inertia_inverse: Mat3,
}

impl Body {
    /// A solid box of half-extents `half`, rotated by `rotation`, of mass `mass`.
    fn cuboid(centre: Vec3, half: Vec3, rotation: Mat3, mass: f64) -> Body {
        let (x2, y2, z2) = (half.x * half.x, half.y * half.y, half.z * half.z);
        let body = Vec3::new(3.0 / (mass * (y2 + z2)), 3.0 / (mass * (x2 + z2)), 3.0 / (mass * (x2 + y2)));
        Body { centre, mass, inertia_inverse: rotation * Mat3::from_diagonal(&body) * rotation.transpose() }
    }

    /// The 6 × 6 row-major `H⁻¹` block `diag(I₃/m, R I_body⁻¹ Rᵀ)`.
    fn inverse_mass_block(&self) -> Vec<f64> {
        let mut block = vec![0.0; 36];
        for i in 0..3 {
            block[i * 6 + i] = 1.0 / self.mass;
            for j in 0..3 {
                block[(3 + i) * 6 + 3 + j] = self.inertia_inverse[(i, j)];
            }
        }
        block
    }
}

/// The kind of a contact's friction rows.
#[derive(Clone, Copy)]
enum Friction {
    /// `W = 0`, regularized like the normal rows: `10⁻⁶ A_ii`.
    Stick,
    /// `W = factor · A_ii` on both tangent rows.
    Slide(f64),
}

/// One rigid contact: point `p`, normal `n` (pointing into `a`), tangents turned by
/// `angle`.
struct Contact {
    a: usize,
    b: Option<usize>,
    point: Vec3,
    normal: Vec3,
    angle: f64,
    friction: Friction,
}

/// Pushes the three rows (normal, two tangents) of contact `c`, starting at row `row`.
fn contact_rows(c: &Contact, bodies: &[Body], row: usize, entries: &mut Vec<(usize, usize, f64)>) {
    let (t1, t2) = tangents(&c.normal, c.angle);
    for (k, d) in [c.normal, t1, t2].iter().enumerate() {
        for (body, sign) in [(Some(c.a), 1.0), (c.b, -1.0)] {
            let Some(body) = body else { continue };
            let angular = (c.point - bodies[body].centre).cross(d);
            for q in 0..3 {
                entries.push((row + k, 6 * body + q, sign * d[q]));
                entries.push((row + k, 6 * body + 3 + q, sign * angular[q]));
            }
        }
    }
}

/// Assembles the system of rigid `bodies` with `contacts`, free velocities `free` and
/// displacements `displacement` from the touching placement (`[v; ω]`, `[δx; δθ]` per
/// body): right-hand side `−J (ũ + δq/h)`.
fn rigid_system(
    name: String,
    bodies: &[Body],
    contacts: &[Contact],
    free: &[f64],
    displacement: &[f64],
) -> Result<SchurSystem> {
    let rows = 3 * contacts.len();
    let mut entries = Vec::with_capacity(rows * 24);
    for (i, c) in contacts.iter().enumerate() {
        contact_rows(c, bodies, 3 * i, &mut entries);
    }
    let j = CsrMatrix::from_triplets(rows, 6 * bodies.len(), &entries)?;
    let h_inverse = BlockDiagonal::new(&bodies.iter().map(Body::inverse_mass_block).collect::<Vec<_>>())?;
    let schur = SparseSchur::new(j, h_inverse)?;
    let diagonal = schur.diagonal();
    let mut compliance = vec![0.0; rows];
    let mut rhs = vec![0.0; rows];
    let velocity: Vec<f64> = free.iter().zip(displacement).map(|(u, d)| u + d / TIME_STEP).collect();
    schur.j().multiply(&velocity, &mut rhs);
    for (i, c) in contacts.iter().enumerate() {
        compliance[3 * i] = NORMAL_COMPLIANCE * diagonal[3 * i];
        let w = match c.friction {
            Friction::Stick => NORMAL_COMPLIANCE,
            Friction::Slide(w) => w,
        };
        compliance[3 * i + 1] = w * diagonal[3 * i + 1];
        compliance[3 * i + 2] = w * diagonal[3 * i + 2];
    }
    for b in &mut rhs {
        *b = -*b;
    }
    Ok(SchurSystem { name, schur, compliance, rhs })
}

/// Columns per row of the pile (along x); rows of columns are spaced along y.
const PILE_COLUMNS: usize = 10;

/// A pile of rigid boxes with about `contacts` contacts (within 5% once `contacts ≳
/// 300`; at least one box), `3 · contacts` rows, seeded by `seed`.
///
/// Scene: rows of ten columns of boxes on the ground plane `z = 0`. Each
/// column has a half-width along x (0.15–0.35 m) shared by its boxes; each box has its own
/// half-depth (0.15–0.35 m), half-height (0.1–0.3 m), mass (1–50 kg, independent of size),
/// a small offset along y and a yaw of up to ±3°. A box rests on the one below (or the
/// ground) on four contacts at the corners of the overlap of their faces; neighbouring
/// columns of a row touch with probability 0.6, and then every pair of boxes whose side
/// faces overlap by more than 2 cm leans on four contacts (normal along the right box's
/// x axis).
///
/// Rows per contact: normal `[n; (p − c_a) × n]` on body `a` (the upper or right box),
/// its negative with `c_b` on body `b` (none for ground contacts), then two tangents
/// likewise. Velocity coordinates per body: `[v; ω]`, world frame, about the centre of
/// mass; `H⁻¹` per body `diag(I₃/m, R I_body⁻¹ Rᵀ)`. Compliance: normal rows
/// `10⁻⁶ A_ii`; friction rows of half the contacts (sliding) `w A_ii` with `w` uniform in
/// `[0, 1)`, of the other half (sticking, `W = 0`) the same `10⁻⁶ A_ii` regularization as
/// the normal rows (with exactly 0 there, PCR stalls near `10⁻⁶` relative: the
/// near-null space then mixes rows of compliance `10⁻⁶` and 0 into a continuum).
/// Right-hand side: `−J (ũ + δq/h)`: `ũ` gravity over `h` plus seeded velocities
/// (±0.05 m/s, ±0.1 rad/s), `δq` a seeded displacement of every body from its touching
/// placement (up to 1 mm down, ±0.3 mm sideways, ±1 mrad), so the normal rows carry the
/// gap term `−φ/h` of slight penetrations (`φ = J_n δq`) and the tangent rows the drift
/// of the same displacement. Columns are 2 to 5 boxes high.
///
/// Errors: `contacts == 0` ([`Error::InvalidInput`]).
pub fn contact_pile(contacts: usize, seed: u64) -> Result<SchurSystem> {
    if contacts == 0 {
        return Err(Error::InvalidInput("contact_pile: at least one contact".into()));
    }
    let (bodies, list, free, displacement) = pile_scene(contacts, seed);
    rigid_system(format!("contact_pile(contacts = {contacts}, seed = {seed})"), &bodies, &list, &free, &displacement)
}

/// The bodies, contacts and free velocities of [`contact_pile`].
fn pile_scene(contacts: usize, seed: u64) -> (Vec<Body>, Vec<Contact>, Vec<f64>, Vec<f64>) {
    let mut rng = SplitMix64(seed);
    let mut bodies: Vec<Body> = Vec::new();
    let mut list: Vec<Contact> = Vec::new();
    // A placed box: body, centre, half-extents.
    struct Placed {
        body: usize,
        centre: Vec3,
        half: Vec3,
    }
    let row_pitch = 0.9;
    let mut row = 0;
    'rows: loop {
        let y0 = row as f64 * row_pitch;
        let mut x = 0.0;
        let mut previous: Vec<Placed> = Vec::new();
        for column in 0..PILE_COLUMNS {
            let half_width = rng.range(0.15, 0.35);
            let leaning = column > 0 && rng.unit() < 0.6;
            x += if column == 0 { half_width } else { half_width + if leaning { 0.0 } else { 0.02 } };
            let height = 2 + (rng.next_u64() % 4) as usize;
            let mut current: Vec<Placed> = Vec::new();
            let mut top = 0.0;
            for _ in 0..height {
                let half = Vec3::new(half_width, rng.range(0.15, 0.35), rng.range(0.1, 0.3));
                let sink = rng.range(0.0, 1e-3);
                let centre = Vec3::new(x, y0 + rng.range(-0.05, 0.05), top + half.z - sink);
                let rotation = yaw(rng.range(-3.0, 3.0).to_radians());
                let body = bodies.len();
                bodies.push(Body::cuboid(centre, half, rotation, rng.range(1.0, 50.0)));
                // The support: the ground, or the box below.
                let (lo, hi, below) = match current.last() {
                    None => (centre - half, centre + half, None),
                    Some(b) => (
                        (centre - half).sup(&(b.centre - b.half)),
                        (centre + half).inf(&(b.centre + b.half)),
                        Some(b.body),
                    ),
                };
                for corner in 0..4 {
                    let px = if corner & 1 == 0 { lo.x } else { hi.x };
                    let py = if corner & 2 == 0 { lo.y } else { hi.y };
                    list.push(Contact {
                        a: body,
                        b: below,
                        point: Vec3::new(px, py, top),
                        normal: Vec3::z(),
                        angle: rng.range(0.0, std::f64::consts::TAU),
                        friction: friction(&mut rng),
                    });
                }
                // Leaning on the boxes of the previous column whose side faces overlap.
                if leaning {
                    for b in &previous {
                        let (zlo, zhi) = (
                            (centre.z - half.z).max(b.centre.z - b.half.z),
                            (centre.z + half.z).min(b.centre.z + b.half.z),
                        );
                        let (ylo, yhi) = (
                            (centre.y - half.y).max(b.centre.y - b.half.y),
                            (centre.y + half.y).min(b.centre.y + b.half.y),
                        );
                        if zhi - zlo < 0.02 || yhi - ylo < 0.02 {
                            continue;
                        }
                        let normal = rotation * Vec3::x();
                        for corner in 0..4 {
                            let pz = if corner & 1 == 0 { zlo } else { zhi };
                            let py = if corner & 2 == 0 { ylo } else { yhi };
                            list.push(Contact {
                                a: body,
                                b: Some(b.body),
                                point: Vec3::new(x - half_width, py, pz),
                                normal,
                                angle: rng.range(0.0, std::f64::consts::TAU),
                                friction: friction(&mut rng),
                            });
                        }
                    }
                }
                top = centre.z + half.z;
                current.push(Placed { body, centre, half });
                if list.len() >= contacts {
                    break 'rows;
                }
            }
            x += half_width;
            previous = current;
        }
        row += 1;
    }
    let mut free = vec![0.0; 6 * bodies.len()];
    for b in 0..bodies.len() {
        for q in 0..3 {
            free[6 * b + q] = rng.range(-0.05, 0.05);
            free[6 * b + 3 + q] = rng.range(-0.1, 0.1);
        }
        free[6 * b + 2] -= GRAVITY * TIME_STEP;
    }
    let mut displacement = vec![0.0; 6 * bodies.len()];
    for b in 0..bodies.len() {
        displacement[6 * b] = rng.range(-3e-4, 3e-4);
        displacement[6 * b + 1] = rng.range(-3e-4, 3e-4);
        displacement[6 * b + 2] = -rng.range(0.0, 1e-3);
        for q in 3..6 {
            displacement[6 * b + q] = rng.range(-1e-3, 1e-3);
        }
    }
    (bodies, list, free, displacement)
}

/// Sticking (`W = 0`, regularized to `10⁻⁶ A_ii`) or sliding (`W = w A_ii`, `w ∈ [0, 1)`),
/// half each.
fn friction(rng: &mut SplitMix64) -> Friction {
    if rng.unit() < 0.5 {
        Friction::Stick
    } else {
        Friction::Slide(rng.unit())
    }
}

/// One rigid cylinder (radius 0.5 m, height 0.5 m, 10 kg) resting on the ground on `k`
/// contacts evenly spaced on its bottom rim: the paper's near-singular ring of contacts.
///
/// `J` is `3k × 6`, so `A = J H⁻¹ Jᵀ` has rank ≤ 6. Compliance: `u_i ·`
/// [`RING_COMPLIANCE`] `· A_ii` on every row, `u_i` uniform in `[0, 1)` (fixed seed): a
/// lagged compliance that differs from contact to contact, at most `10⁻¹²` relative, so
/// `A + C` is near-singular (condition number above `10¹²`). Right-hand side: `−J v` with
/// `v` a falling velocity (−0.5 m/s along z, a little sideways drift) plus a small twist
/// (0.3 rad/s about z, 0.05 rad/s tilting), which is in the range of `A`, plus a seeded
/// part of relative size [`RING_OUT_OF_RANGE`] on every row (uneven ground on the normal
/// rows, lagged slip on the tangents), which is mostly outside it.
///
/// Why the spread: with a compliance exactly proportional to `A_ii` the Jacobi-scaled
/// system has only seven distinct eigenvalues and conjugate gradients converge as fast
/// as conjugate residuals (9 iterations); spread over `[0, 10⁻¹²]` the near-null part is
/// a continuum, which is where CG's residual turns erratic (see the module tests).
///
/// Errors: `k < 3` ([`Error::InvalidInput`]).
pub fn contact_ring(k: usize) -> Result<SchurSystem> {
    if k < 3 {
        return Err(Error::InvalidInput(format!("contact_ring: {k} contacts; a ring needs at least 3")));
    }
    let (radius, half_height, mass) = (0.5, 0.25, 10.0);
    let centre = Vec3::new(0.0, 0.0, half_height);
    let (ixx, izz) =
        (mass * (3.0 * radius * radius + 4.0 * half_height * half_height) / 12.0, mass * radius * radius / 2.0);
    let body = Body { centre, mass, inertia_inverse: Mat3::from_diagonal(&Vec3::new(1.0 / ixx, 1.0 / ixx, 1.0 / izz)) };
    let list: Vec<Contact> = (0..k)
        .map(|i| {
            let theta = std::f64::consts::TAU * i as f64 / k as f64;
            Contact {
                a: 0,
                b: None,
                point: Vec3::new(radius * theta.cos(), radius * theta.sin(), 0.0),
                normal: Vec3::z(),
                angle: 0.0,
                friction: Friction::Stick,
            }
        })
        .collect();
    let free = [0.02, -0.01, -0.5, 0.05, -0.03, 0.3];
    let mut system = rigid_system(format!("contact_ring(k = {k})"), &[body], &list, &free, &[0.0; 6])?;
    let diagonal = system.schur.diagonal();
    let mut rng = SplitMix64(0x005E_ED0F_2196);
    for (c, d) in system.compliance.iter_mut().zip(&diagonal) {
        *c = RING_COMPLIANCE * d * rng.unit();
    }
    let scale = system.rhs.iter().map(|b| b * b).sum::<f64>().sqrt() / (3.0 * k as f64).sqrt();
    for b in &mut system.rhs {
        *b += RING_OUT_OF_RANGE * scale * rng.range(-1.0, 1.0);
    }
    Ok(system)
}

/// The cell counts `[nx, ny, nz]` whose [`fem_contact`] rows (`18 nx ny nz` stretch rows,
/// `3 (nx + 1)(ny + 1)` contact rows) come closest to `unknowns`, among boxes whose cell
/// counts differ by at most a factor of two.
fn fem_cells(unknowns: usize) -> [usize; 3] {
    let rows = |c: [usize; 3]| 18 * c[0] * c[1] * c[2] + 3 * (c[0] + 1) * (c[1] + 1);
    let top = ((unknowns as f64 / 18.0).cbrt() * 2.0).ceil() as usize + 1;
    let mut best = [1, 1, 1];
    for nx in 1..=top {
        for ny in nx..=(2 * nx).min(top) {
            for nz in nx.div_ceil(2).max(1)..=(2 * nx).min(top) {
                let c = [nx, ny, nz];
                if *c.iter().max().unwrap_or(&1) > 2 * *c.iter().min().unwrap_or(&1) {
                    continue;
                }
                if rows(c).abs_diff(unknowns) < rows(best).abs_diff(unknowns) {
                    best = c;
                }
            }
        }
    }
    best
}

/// The FEM material: Young's modulus (Pa), Poisson ratio, density (kg/m³).
const FEM_YOUNG: f64 = 1e5;
const FEM_POISSON: f64 = 0.45;
const FEM_DENSITY: f64 = 1000.0;

/// The principal stretches of `f`, descending, with their left and right singular
/// vectors: `∂s_i/∂F = u_i v_iᵀ` (for distinct stretches).
pub(crate) fn principal_stretches(f: &Mat3) -> [(f64, Vec3, Vec3); 3] {
    let svd = f.svd(true, true);
    let (u, vt) = (svd.u.unwrap_or_else(Mat3::identity), svd.v_t.unwrap_or_else(Mat3::identity));
    let mut out: [(f64, Vec3, Vec3); 3] =
        std::array::from_fn(|i| (svd.singular_values[i], u.column(i).into_owned(), vt.row(i).transpose()));
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out
}

/// A soft box in paper 000's generalized-compliance form (§9), resting on the ground,
/// with about `unknowns` rows (within 5% once `unknowns ≳ 2000`), seeded by `seed`.
///
/// Mesh: [`box_mesh`] of cubic cells of a box about 0.2 m wide (cell counts chosen so
/// that the rows come closest to `unknowns`), density 1000 kg/m³, deformed: scaled by
/// (1.04, 1.02, 0.9) (squashed 10% vertically, bulging sideways), every coordinate
/// perturbed by up to ±0.5% of a cell (seeded), and the bottom vertices pressed up to
/// 0.1 mm into the ground `z = 0`.
///
/// Rows: three per tet, the principal stretches `s_i` (descending) of `F = D_s D_m⁻¹`,
/// row `∂s_i/∂x` over the tet's 12 coordinates (`∂s_i/∂F = u_i v_iᵀ`, so `∂s_i/∂x_{a,c} =
/// u_i[c] (v_i · ∇N_a)`); then three per bottom vertex, unit rows on its z, x and y
/// coordinates (contact normal `+z` and two tangents). `H⁻¹`: inverse lumped mass (a
/// quarter of each tet's mass per vertex), one 3 × 3 block per vertex.
///
/// Compliance: stretch row `i` of tet `e`: `1/(k_i V_e h²)` with `k_i = ∂²Ψ/∂s_i²` the
/// diagonal of the stable Neo-Hookean Hessian (Smith et al. 2018; `Ψ = C₁(I_C − 3) +
/// D₁(J − α)²`, `C₁ = μ/2`, `D₁ = λ/2`, `α = 1 + μ/λ`, Young 1e5 Pa, ν = 0.45):
/// `k_i = 2 (C₁ + D₁ s_j² s_k²)`, the off-diagonal coupling dropped (an approximation:
/// the paper inverts the full 3 × 3 block). Contact rows: normal `10⁻⁶ A_ii`, tangents
/// sticking (0). Right-hand side: `−J ũ − (s_i − 1)/h` on stretch rows, `−J ũ − φ/h` on
/// normal rows, `−J ũ` on tangents, with `ũ` gravity over `h` plus seeded lateral
/// velocities of up to ±1 cm/s.
///
/// Errors: `unknowns == 0` ([`Error::InvalidInput`]).
pub fn fem_contact(unknowns: usize, seed: u64) -> Result<SchurSystem> {
    if unknowns == 0 {
        return Err(Error::InvalidInput("fem_contact: at least one row".into()));
    }
    let (mesh, x, bottom, free) = fem_scene(unknowns, seed)?;
    let n = mesh.num_vertices();
    let tets = mesh.num_tets();
    let rows = 3 * tets + 3 * bottom.len();
    let mu = FEM_YOUNG / (2.0 * (1.0 + FEM_POISSON));
    let lambda = FEM_YOUNG * FEM_POISSON / ((1.0 + FEM_POISSON) * (1.0 - 2.0 * FEM_POISSON));
    let (c1, d1) = (mu / 2.0, lambda / 2.0);
    let h = TIME_STEP;

    let mut entries = Vec::with_capacity(36 * tets + 3 * bottom.len());
    let mut compliance = vec![0.0; rows];
    let mut error = vec![0.0; rows];
    let mut mass = vec![0.0; n];
    for t in 0..tets {
        let tet = mesh.tets()[t];
        let volume = mesh.volumes()[t];
        for &v in &tet {
            mass[v] += FEM_DENSITY * volume / 4.0;
        }
        let grads = mesh.shape_gradients(t);
        let s = principal_stretches(&mesh.deformation_gradient(t, &x));
        for (i, (si, ui, vi)) in s.iter().enumerate() {
            let row = 3 * t + i;
            for (a, &vert) in tet.iter().enumerate() {
                let w = vi.dot(&grads[a]);
                for c in 0..3 {
                    entries.push((row, 3 * vert + c, ui[c] * w));
                }
            }
            let others: f64 = s.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, o)| o.0 * o.0).product();
            let stiffness = 2.0 * (c1 + d1 * others);
            compliance[row] = 1.0 / (stiffness * volume * h * h);
            error[row] = (si - 1.0) / h;
        }
    }
    for (k, &v) in bottom.iter().enumerate() {
        let row = 3 * tets + 3 * k;
        entries.push((row, 3 * v + 2, 1.0));
        entries.push((row + 1, 3 * v, 1.0));
        entries.push((row + 2, 3 * v + 1, 1.0));
        error[row] = x[v].z / h;
    }
    let j = CsrMatrix::from_triplets(rows, 3 * n, &entries)?;
    let blocks: Vec<Vec<f64>> =
        mass.iter().map(|m| vec![1.0 / m, 0.0, 0.0, 0.0, 1.0 / m, 0.0, 0.0, 0.0, 1.0 / m]).collect();
    let schur = SparseSchur::new(j, BlockDiagonal::new(&blocks)?)?;
    let diagonal = schur.diagonal();
    for k in 0..bottom.len() {
        let row = 3 * tets + 3 * k;
        compliance[row] = NORMAL_COMPLIANCE * diagonal[row];
    }
    let mut rhs = vec![0.0; rows];
    schur.j().multiply(&free, &mut rhs);
    for (b, e) in rhs.iter_mut().zip(&error) {
        *b = -*b - e;
    }
    Ok(SchurSystem { name: format!("fem_contact(unknowns = {unknowns}, seed = {seed})"), schur, compliance, rhs })
}

/// The mesh, deformed positions, bottom vertices and free velocities of [`fem_contact`].
/// What [`fem_scene`] returns: the rest mesh, deformed positions, bottom vertices and
/// free velocities.
type FemScene = (crate::soft::mesh::TetMesh, Vec<Vec3>, Vec<usize>, Vec<f64>);

fn fem_scene(unknowns: usize, seed: u64) -> Result<FemScene> {
    let cells = fem_cells(unknowns);
    let cell = 0.2 / *cells.iter().max().unwrap_or(&1) as f64;

    let extent = Vec3::new(cells[0] as f64, cells[1] as f64, cells[2] as f64) * cell;
    let mesh = box_mesh(cells, extent, Vec3::zeros())?;
    let mut rng = SplitMix64(seed);
    let scale = Vec3::new(1.04, 1.02, 0.9);
    let bottom: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z == 0.0).collect();
    let x: Vec<Vec3> = mesh
        .vertices()
        .iter()
        .map(|p| {
            let mut q = p.component_mul(&scale);
            for c in 0..3 {
                q[c] += 0.005 * cell * rng.range(-1.0, 1.0);
            }
            if p.z == 0.0 {
                q.z = -rng.range(0.0, 1e-4);
            }
            q
        })
        .collect();
    let n = mesh.num_vertices();
    let mut free = vec![0.0; 3 * n];
    for v in 0..n {
        free[3 * v] = rng.range(-0.01, 0.01);
        free[3 * v + 1] = rng.range(-0.01, 0.01);
        free[3 * v + 2] = -GRAVITY * TIME_STEP;
    }
    Ok((mesh, x, bottom, free))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::ncp::{pcr_solve, PcrOptions, SchurOperator};
    use crate::solver::DelassusOperator;
    use nalgebra::DMatrix;
    use std::time::Instant;

    /// The dense `A = J H⁻¹ Jᵀ`.
    fn dense(system: &SchurSystem) -> DMatrix<f64> {
        system.schur.dense()
    }

    /// Asserts the residual history never grows by more than 1e-12 relative.
    fn assert_monotone(residuals: &[f64], what: &str) {
        for (k, w) in residuals.windows(2).enumerate() {
            assert!(w[1] <= w[0] * (1.0 + 1e-12), "{what}: residual grew at iteration {}: {} -> {}", k + 1, w[0], w[1]);
        }
    }

    /// Solves the system by PCR (shift 0) and returns the report.
    fn pcr(system: &SchurSystem, tolerance: f64, max_iterations: usize) -> crate::solver::ncp::PcrReport {
        let op = SchurOperator { delassus: &system.schur, compliance: &system.compliance, shift: 0.0 };
        let mut x = vec![0.0; system.rows()];
        pcr_solve(&op, &system.jacobi_diagonal(0.0), &system.rhs, &mut x, &PcrOptions { max_iterations, tolerance })
            .unwrap()
    }

    /// Jacobi-preconditioned conjugate gradients from 0: the history of `‖r‖_{P⁻¹}` and
    /// whether it broke down (a non-positive or non-finite `p·Ap`).
    fn pcg(system: &SchurSystem, max_iterations: usize, tolerance: f64) -> (Vec<f64>, bool) {
        let op = SchurOperator { delassus: &system.schur, compliance: &system.compliance, shift: 0.0 };
        let pinv: Vec<f64> = system.jacobi_diagonal(0.0).iter().map(|d| 1.0 / d).collect();
        let dot = |u: &[f64], v: &[f64]| u.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
        let n = system.rows();
        let mut x = vec![0.0; n];
        let mut r = system.rhs.clone();
        let mut z: Vec<f64> = r.iter().zip(&pinv).map(|(r, p)| r * p).collect();
        let mut p = z.clone();
        let mut ap = vec![0.0; n];
        let mut rz = dot(&r, &z);
        let start = rz.sqrt();
        let mut history = vec![start];
        for _ in 0..max_iterations {
            if history.last().is_some_and(|&h| h <= tolerance * start) {
                break;
            }
            op.apply(&p, &mut ap);
            let pap = dot(&p, &ap);
            if pap <= 0.0 || !pap.is_finite() {
                return (history, true);
            }
            let alpha = rz / pap;
            for i in 0..n {
                x[i] += alpha * p[i];
                r[i] -= alpha * ap[i];
                z[i] = r[i] * pinv[i];
            }
            let rz_new = dot(&r, &z);
            let beta = rz_new / rz;
            rz = rz_new;
            for i in 0..n {
                p[i] = z[i] + beta * p[i];
            }
            history.push(rz.max(0.0).sqrt());
        }
        (history, false)
    }

    #[test]
    fn sizes_and_determinism() {
        let pile = contact_pile(2000, 1).unwrap();
        assert_eq!(pile.rows() % 3, 0);
        assert!((pile.rows() as f64 - 6000.0).abs() <= 300.0, "pile rows {}", pile.rows());
        let fem = fem_contact(6000, 1).unwrap();
        assert!((fem.rows() as f64 - 6000.0).abs() <= 300.0, "fem rows {}", fem.rows());
        for s in [&pile, &fem] {
            assert_eq!(s.compliance.len(), s.rows());
            assert_eq!(s.rhs.len(), s.rows());
            assert!(s.compliance.iter().all(|c| c.is_finite() && *c >= 0.0));
            assert!(s.rhs.iter().all(|b| b.is_finite()));
        }
        assert_eq!(contact_pile(2000, 1).unwrap(), pile);
        assert_eq!(fem_contact(6000, 1).unwrap(), fem);
        assert_ne!(contact_pile(2000, 2).unwrap(), pile);
        assert_ne!(fem_contact(6000, 2).unwrap(), fem);
        assert_eq!(contact_ring(64).unwrap(), contact_ring(64).unwrap());
        assert_eq!(contact_ring(64).unwrap().rows(), 192);
        assert!(contact_pile(0, 1).is_err() && fem_contact(0, 1).is_err() && contact_ring(2).is_err());
    }

    #[test]
    fn large_systems_generate_quickly() {
        for (what, make) in [
            ("contact_pile(10_000, 1)", Box::new(|| contact_pile(10_000, 1)) as Box<dyn Fn() -> Result<SchurSystem>>),
            ("fem_contact(60_000, 1)", Box::new(|| fem_contact(60_000, 1))),
        ] {
            let start = Instant::now();
            let s = make().unwrap();
            let seconds = start.elapsed().as_secs_f64();
            eprintln!(
                "{what}: {} rows, {} columns, nnz(J) {}, {seconds:.3} s",
                s.rows(),
                s.schur.j().cols(),
                s.schur.j().nnz()
            );
            assert!(seconds < 5.0, "{what} took {seconds} s");
        }
    }

    #[test]
    fn stretch_rows_match_finite_differences() {
        let (mesh, x, _, _) = fem_scene(400, 3).unwrap();
        let system = fem_contact(400, 3).unwrap();
        let j = system.schur.j();
        let stretches = |x: &[Vec3], t: usize| principal_stretches(&mesh.deformation_gradient(t, x)).map(|s| s.0);
        let step = 1e-6 * 0.2;
        let mut checked = 0;
        for t in 0..mesh.num_tets() {
            for i in 0..3 {
                let row = 3 * t + i;
                let mut analytic = [0.0; 12];
                for k in j.row_ptr()[row]..j.row_ptr()[row + 1] {
                    let col = j.col_idx()[k];
                    let a = mesh.tets()[t].iter().position(|&v| v == col / 3).expect("a column of the tet");
                    analytic[3 * a + col % 3] += j.values()[k];
                }
                let scale = analytic.iter().fold(0.0f64, |m, a| m.max(a.abs()));
                for (a, &v) in mesh.tets()[t].iter().enumerate() {
                    for c in 0..3 {
                        let mut xp = x.clone();
                        xp[v][c] += step;
                        let mut xm = x.clone();
                        xm[v][c] -= step;
                        let fd = (stretches(&xp, t)[i] - stretches(&xm, t)[i]) / (2.0 * step);
                        let got = analytic[3 * a + c];
                        assert!(
                            (got - fd).abs() <= 1e-6 * scale,
                            "tet {t} stretch {i} vertex {a} coordinate {c}: {got} vs {fd}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked >= 36 * 20);
    }

    #[test]
    fn contact_rows_give_the_contact_point_velocity() {
        let (bodies, list, _, _) = pile_scene(300, 5);
        let system = contact_pile(300, 5).unwrap();
        let mut rng = SplitMix64(11);
        let u: Vec<f64> = (0..6 * bodies.len()).map(|_| rng.range(-1.0, 1.0)).collect();
        let mut ju = vec![0.0; system.rows()];
        system.schur.j().multiply(&u, &mut ju);
        let velocity = |b: usize, p: &Vec3| {
            let v = Vec3::new(u[6 * b], u[6 * b + 1], u[6 * b + 2]);
            let w = Vec3::new(u[6 * b + 3], u[6 * b + 4], u[6 * b + 5]);
            v + w.cross(&(p - bodies[b].centre))
        };
        let mut sides = 0;
        for (i, c) in list.iter().enumerate() {
            let (t1, t2) = tangents(&c.normal, c.angle);
            assert!((c.normal.norm() - 1.0).abs() < 1e-12 && t1.dot(&c.normal).abs() < 1e-12);
            assert!(t2.dot(&c.normal).abs() < 1e-12 && t1.dot(&t2).abs() < 1e-12 && (t2.norm() - 1.0).abs() < 1e-12);
            let relative = velocity(c.a, &c.point) - c.b.map_or(Vec3::zeros(), |b| velocity(b, &c.point));
            for (k, d) in [c.normal, t1, t2].iter().enumerate() {
                let expect = d.dot(&relative);
                assert!((ju[3 * i + k] - expect).abs() < 1e-12, "contact {i} row {k}: {} vs {expect}", ju[3 * i + k]);
            }
            sides += usize::from(c.normal.z.abs() < 0.5);
        }
        assert!(sides > 0, "some boxes lean on their neighbours");
        assert!(list.iter().any(|c| c.b.is_none()) && list.iter().any(|c| c.b.is_some()));
    }

    #[test]
    fn delassus_is_symmetric_positive_semidefinite() {
        for system in [contact_pile(120, 4).unwrap(), fem_contact(300, 4).unwrap(), contact_ring(16).unwrap()] {
            let a = dense(&system);
            let largest = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!((&a - a.transpose()).amax() <= 1e-12 * largest, "{}: not symmetric", system.name);
            let eig = a.clone().symmetric_eigen().eigenvalues;
            let (lo, hi) = (eig.min(), eig.max());
            assert!(lo >= -1e-10 * hi, "{}: eigenvalues in [{lo}, {hi}]", system.name);
            let diagonal = system.schur.diagonal();
            for i in 0..system.rows() {
                assert!((diagonal[i] - a[(i, i)]).abs() <= 1e-12 * largest);
            }
        }
    }

    #[test]
    fn ring_is_near_singular_and_pcr_beats_cg() {
        let ring = contact_ring(64).unwrap();
        let a = dense(&ring);
        let eig = a.symmetric_eigen().eigenvalues;
        let hi = eig.max();
        let rank = eig.iter().filter(|&&e| e > 1e-9 * hi).count();
        assert!(rank <= 6, "rank {rank}");
        let report = pcr(&ring, 1e-6, 200);
        let cr = &report.residuals;
        eprintln!(
            "ring PCR: {} iterations, converged {}, final relative residual {:.3e}",
            report.iterations,
            report.converged,
            cr[cr.len() - 1] / cr[0]
        );
        assert_monotone(cr, "ring PCR");
        assert!(cr[cr.len() - 1] <= 1e-6 * cr[0] && report.iterations <= 200);
        // Jacobi-preconditioned CG on the same system. In double precision it does reach
        // 1e-6 here, but later than PCR and only after its residual has risen far above
        // its start (the near-null continuum of the compliance). Variants tried while
        // building this system: a compliance exactly 1e-12·A_ii gives 9 iterations for
        // both; friction rows with W = 0 and an inconsistent part of 1e-6 on them make CG
        // blow up (residual 4.6e11, p·Ap ≤ 0 at iteration 21) but put PCR's floor at the
        // tolerance itself. The test asserts: CG fails, breaks down, or needs more
        // iterations with a residual that grows above 10× its start, while PCR is
        // monotone. That margin depends on the compliance draw: with this seed PCR takes
        // 35 iterations and CG 65 (peak 22× its start); another seed tried gave 24 vs 28
        // (peak 6×), so the gap is real but not large in double precision.
        let (cg, broke) = pcg(&ring, 200, 1e-6);
        let reached = !broke && cg[cg.len() - 1] <= 1e-6 * cg[0];
        let largest = cg.iter().fold(0.0f64, |m, &r| m.max(r)) / cg[0];
        eprintln!(
            "ring CG: {} iterations, broke down {broke}, reached 1e-6 {reached}, final relative residual {:.3e}, largest {largest:.3e}",
            cg.len() - 1,
            cg[cg.len() - 1] / cg[0],
        );
        assert!(
            !reached || (cg.len() - 1 > report.iterations && largest > 10.0),
            "CG beat PCR on the ring: {} vs {} iterations, largest residual {largest}",
            cg.len() - 1,
            report.iterations
        );
    }

    #[test]
    fn pcr_converges_on_the_large_systems() {
        for system in [contact_pile(2000, 1).unwrap(), fem_contact(6000, 1).unwrap()] {
            let start = Instant::now();
            let report = pcr(&system, 1e-8, 2000);
            eprintln!(
                "{}: {} rows, PCR {} iterations, converged {}, relative residual {:.3e}, {:.2} s",
                system.name,
                system.rows(),
                report.iterations,
                report.converged,
                report.residuals[report.iterations] / report.residuals[0],
                start.elapsed().as_secs_f64()
            );
            assert_monotone(&report.residuals, &system.name);
            assert!(report.converged, "{} did not converge", system.name);
        }
    }
}

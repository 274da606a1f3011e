//! The incremental potential of one implicit step of a soft body, whose minimiser over
//! the free degrees of freedom is the end-of-step configuration `y = x⁺`:
//!
//! ```text
//! Φ(y) = Σ_i m_i [ c |y_i − x_i − h v_i|² / (2h²) + α |y_i − x_i|² / (2h) − (g · y_i) ]
//!        − u · y + Σ_e V_e [Ψ(F_e(z))/w + Ψ_d(F_e(y), F_e(x))],   z = x + w (y − x),
//! ```
//!
//! with the lumped masses `m_i`, mass damping α, gravity g, vertex forces u, the
//! material's energy density Ψ and the viscous potential Ψ_d of `damping.rs`.
//! Backward Euler has `c = 1, w = 1`: `∇Φ = 0` is `M (v⁺ − v)/h = f(x⁺) − α M v⁺ + M g + u`
//! with `v⁺ = (x⁺ − x)/h`. The implicit midpoint rule has `c = 2, w = 1/2`:
//! `2M (x⁺ − x − h v)/h² = f((x + x⁺)/2) + …`, i.e. `M (v⁺ − v) = h f(x_mid)` with
//! `v⁺ = 2(x⁺ − x)/h − v`. The Hessian is `M (c/h² + α/h) + Σ_e V_e Bₑᵀ (w ∂P/∂F(z) +
//! ∂P_d/∂F(y)) Bₑ` (`Bₑ = ∂vec(F_e)/∂x_e`), assembled into the lower triangle of the
//! free-free block ([`super::sparse::HessianPattern`]), optionally with every element's
//! tangent projected onto the PSD cone.

use super::body::SoftBody;
use super::damping;
use super::material::{project_psd, Lame, Mat9};

type Vec9 = nalgebra::SVector<f64, 9>;
use super::sparse::{local_entry, NONE};
use crate::math::{Mat3, Vec3};

/// One step's data that does not change over Newton iterations.
#[derive(Clone, Debug)]
pub(crate) struct StepPotential<'a> {
    pub body: &'a SoftBody,
    pub h: f64,
    pub x: &'a [f64],
    pub v: &'a [f64],
    pub u: &'a [f64],
    /// Whether inertia and damping are in (a step) or not (static equilibrium).
    pub dynamic: bool,
    /// The inertia weight c (1 backward Euler, 2 implicit midpoint).
    pub inertia: f64,
    /// Where the elastic forces are evaluated, `z = x + w (y − x)` (1 or 1/2).
    pub weight: f64,
    /// The start-of-step Green strain of every element (empty without stiffness damping).
    pub start_strains: Vec<Mat3>,
    /// The start-of-step gradient `F(x)` of every element (empty unless `w ≠ 1`: the
    /// elastic point `z` needs it at every evaluation).
    pub start_gradients: Vec<Mat3>,
}

/// What an evaluation of Φ holds.
#[derive(Clone, Debug, Default)]
pub(crate) struct Evaluation {
    /// Φ(y).
    pub energy: f64,
    /// ∇Φ over all degrees of freedom (pinned ones included).
    pub gradient: Vec<f64>,
    /// The Hessian's lower-triangular values over the free ones (empty when not asked).
    pub hessian: Vec<f64>,
    /// Elements with `det F ≤ 0`.
    pub inverted: usize,
    /// Elements whose tangent was changed by the PSD projection.
    pub projected: usize,
}

/// The positions of vertex `i` in a state vector.
#[inline]
pub(crate) fn vertex(y: &[f64], i: usize) -> Vec3 {
    Vec3::new(y[3 * i], y[3 * i + 1], y[3 * i + 2])
}

/// `F = Σ_a y_a ⊗ ∇N_a` of tet `t`.
#[inline]
pub(crate) fn deformation_gradient(body: &SoftBody, t: usize, y: &[f64]) -> Mat3 {
    body.mesh().deformation_gradient_of(t, y)
}

/// `V Bᵀ C B` of a tet with shape gradients `g`, as a dense 12 × 12 (rows `3a + k`).
pub(crate) fn element_matrix(g: &[Vec3; 4], c: &Mat9, volume: f64) -> [[f64; 12]; 12] {
    // T_a[k][col] = Σ_j g_a[j] C[k + 3j, col]
    let mut t = [[[0.0; 9]; 3]; 4];
    for (a, ga) in g.iter().enumerate() {
        for k in 0..3 {
            for col in 0..9 {
                t[a][k][col] = ga[0] * c[(k, col)] + ga[1] * c[(k + 3, col)] + ga[2] * c[(k + 6, col)];
            }
        }
    }
    let mut out = [[0.0; 12]; 12];
    for a in 0..4 {
        for k in 0..3 {
            for (b, gb) in g.iter().enumerate() {
                for l in 0..3 {
                    let ta = &t[a][k];
                    out[3 * a + k][3 * b + l] = volume * (ta[l] * gb[0] + ta[l + 3] * gb[1] + ta[l + 6] * gb[2]);
                }
            }
        }
    }
    out
}

impl<'a> StepPotential<'a> {
    /// The step from `(x, v)` under forces `u` with time step `h`.
    pub fn new(body: &'a SoftBody, h: f64, x: &'a [f64], v: &'a [f64], u: &'a [f64], midpoint: bool) -> Self {
        let start_strains = if body.damping().stiffness > 0.0 {
            (0..body.mesh().num_tets()).map(|t| damping::green_strain(&deformation_gradient(body, t, x))).collect()
        } else {
            Vec::new()
        };
        let (inertia, weight) = if midpoint { (2.0, 0.5) } else { (1.0, 1.0) };
        let start_gradients = if midpoint {
            (0..body.mesh().num_tets()).map(|t| deformation_gradient(body, t, x)).collect()
        } else {
            Vec::new()
        };
        StepPotential { body, h, x, v, u, dynamic: true, inertia, weight, start_strains, start_gradients }
    }

    /// The potential of static equilibrium under gravity and forces `u`: Φ without the
    /// inertial and damping terms (`x` and `v` unused).
    pub fn statics(body: &'a SoftBody, x: &'a [f64], u: &'a [f64]) -> Self {
        StepPotential {
            body,
            h: 1.0,
            x,
            v: x,
            u,
            dynamic: false,
            inertia: 1.0,
            weight: 1.0,
            start_strains: Vec::new(),
            start_gradients: Vec::new(),
        }
    }

    /// The viscous coefficient `β/h`.
    pub fn viscous(&self) -> f64 {
        self.body.damping().stiffness / self.h
    }

    /// The gradients of tet `t` at `y`: `(F(z), F(y))`, where the elastic and the viscous
    /// stresses are evaluated.
    pub fn gradients(&self, t: usize, y: &[f64]) -> (Mat3, Mat3) {
        let fy = deformation_gradient(self.body, t, y);
        if self.weight == 1.0 {
            return (fy, fy);
        }
        let fx = self.start_gradients[t];
        (fx + (fy - fx) * self.weight, fy)
    }

    /// `∂Φ/∂F(y)` of tet `t` per unit volume: the elastic stress at `F(z)` and the viscous
    /// stress at `F(y)`.
    pub fn stress(&self, t: usize, (fz, fy): &(Mat3, Mat3)) -> Mat3 {
        let region = &self.body.regions()[self.body.element_regions()[t]];
        let mut p = region.material.model.stress(fz, &region.lame);
        if !self.start_strains.is_empty() {
            p += damping::stress(fy, &self.start_strains[t], &region.lame, self.viscous());
        }
        p
    }

    /// `∂²Φ/∂F(y)²` of tet `t` per unit volume, unprojected: `w ∂P/∂F(z) + ∂P_d/∂F(y)`.
    pub fn tangent(&self, t: usize, (fz, fy): &(Mat3, Mat3)) -> Mat9 {
        let region = &self.body.regions()[self.body.element_regions()[t]];
        let mut c = region.material.model.tangent(fz, &region.lame) * self.weight;
        if !self.start_strains.is_empty() {
            c += damping::tangent(fy, &self.start_strains[t], &region.lame, self.viscous());
        }
        c
    }

    /// Φ at `y` (all degrees of freedom), with its gradient, and with the Hessian when
    /// `hessian` is set (its element tangents projected onto the PSD cone when
    /// `project` is set).
    pub fn evaluate(&self, y: &[f64], hessian: bool, project: bool) -> Evaluation {
        let body = self.body;
        let mesh = body.mesh();
        let pattern = body.pattern();
        let (h, alpha) = (self.h, body.damping().mass);
        let mut ev = Evaluation { gradient: vec![0.0; y.len()], ..Default::default() };
        if hessian {
            ev.hessian = vec![0.0; pattern.nnz()];
        }
        ev.energy = self.inertial_energy(y, Some(&mut ev.gradient));
        if hessian && self.dynamic {
            let diag = self.inertia / (h * h) + alpha / h;
            for (d, &free) in pattern.free_index.iter().enumerate() {
                if free != NONE {
                    ev.hessian[pattern.diagonal[free]] += body.masses()[d / 3] * diag;
                }
            }
        }
        for t in 0..mesh.num_tets() {
            let f = self.gradients(t, y);
            let volume = mesh.volumes()[t];
            if f.1.determinant() <= 0.0 {
                ev.inverted += 1;
            }
            ev.energy += volume * self.element_energy(t, &f);
            let p = self.stress(t, &f);
            let grads = mesh.shape_gradients(t);
            for (a, &v) in mesh.tets()[t].iter().enumerate() {
                let fa = p * grads[a] * volume;
                for k in 0..3 {
                    ev.gradient[3 * v + k] += fa[k];
                }
            }
            if hessian {
                let mut c = self.tangent(t, &f);
                if project && project_psd(&mut c) {
                    ev.projected += 1;
                }
                let ke = element_matrix(grads, &c, volume);
                let slots = &pattern.element_slots[t];
                for i in 0..12 {
                    for j in i..12 {
                        let s = slots[local_entry(i, j)];
                        if s != NONE {
                            ev.hessian[s] += ke[i][j];
                        }
                    }
                }
            }
        }
        ev
    }

    /// The derivatives of the Hessian's product `zᵀ H(y) a` (`a`, `z` over all degrees of
    /// freedom, zero on the pinned ones): `∂/∂y` added to `grad_y` and the direct `∂/∂x`
    /// (through the midpoint rule's elastic point and the viscous start strain) added to
    /// `grad_x`. Per element, with `A = Σ_a a_a ⊗ ∇N_a` and `Z` alike, the gradient in
    /// `F(y)` is `w² D²P(F_z)[A, Z] + D²P_d(F_y)[A, Z]` and in `F(x)`
    /// `w (1 − w) D²P(F_z)[A, Z] − (β/h) F₀ S(sym(AᵀZ))`. The inertial part of H is
    /// constant. Errors: a material without the closed form
    /// ([`super::material::MaterialModel::stress_curvature`]).
    pub fn hessian_curvature(
        &self,
        y: &[f64],
        a: &[f64],
        z: &[f64],
        grad_y: &mut [f64],
        grad_x: &mut [f64],
    ) -> crate::error::Result<()> {
        let body = self.body;
        let mesh = body.mesh();
        let w = self.weight;
        for (t, tet) in mesh.tets().iter().enumerate() {
            let grads = mesh.shape_gradients(t);
            let (mut am, mut zm) = (Mat3::zeros(), Mat3::zeros());
            for (k, &vtx) in tet.iter().enumerate() {
                am += vertex(a, vtx) * grads[k].transpose();
                zm += vertex(z, vtx) * grads[k].transpose();
            }
            if am.iter().all(|e| *e == 0.0) || zm.iter().all(|e| *e == 0.0) {
                continue;
            }
            let region = &body.regions()[body.element_regions()[t]];
            let f = self.gradients(t, y);
            let elastic = region.material.model.stress_curvature(&f.0, &region.lame, &am, &zm).ok_or_else(|| {
                crate::error::Error::InvalidInput(format!(
                    "the {} material has no closed-form third derivative: a soft body coupled to a world needs \
                     the linear, St. Venant-Kirchhoff or stable Neo-Hookean model",
                    region.material.model.name()
                ))
            })?;
            let mut gy = elastic * (w * w);
            let mut gx = elastic * (w * (1.0 - w));
            if !self.start_strains.is_empty() {
                let c = self.viscous();
                gy += damping::stress_curvature(&f.1, &region.lame, c, &am, &zm);
                let f0 = deformation_gradient(body, t, self.x);
                gx += damping::start_gradient(&am, &f0, &region.lame, c, &zm);
            }
            let volume = mesh.volumes()[t];
            for (k, &vtx) in tet.iter().enumerate() {
                let (dy, dx) = (gy * grads[k] * volume, gx * grads[k] * volume);
                for r in 0..3 {
                    grad_y[3 * vtx + r] += dy[r];
                    grad_x[3 * vtx + r] += dx[r];
                }
            }
        }
        Ok(())
    }

    /// `∂/∂θ [zᵀ H(y) a]` at fixed `y` for θ in the order of
    /// [`SoftBody::param_names`] (`a`, `z` zero on the pinned coordinates): the lumped
    /// masses' share `(c/h² + α/h) Σ_{e∈r} V_e/4 Σ_{i∈e} z_i·a_i` for the density of
    /// region r and `Σ_i m_i z_i·a_i / h` for α; the tangents' shares per region through
    /// their linearity in `(μ, λ)`, mapped to `(E, ν)`; `⟨Z, ∂P_d/∂F [A]⟩/β` for β.
    pub fn hessian_parameter_gradient(&self, y: &[f64], a: &[f64], z: &[f64]) -> Vec<f64> {
        let body = self.body;
        let mesh = body.mesh();
        let nr = body.regions().len();
        let (h, alpha) = (self.h, body.damping().mass);
        let mut out = vec![0.0; 3 * nr + 2];
        let mut lame_bar = vec![[0.0; 2]; nr];
        let diag = self.inertia / (h * h) + alpha / h;
        let unit = [Lame { mu: 1.0, lambda: 0.0 }, Lame { mu: 0.0, lambda: 1.0 }];
        for (t, tet) in mesh.tets().iter().enumerate() {
            let grads = mesh.shape_gradients(t);
            let r = body.element_regions()[t];
            let region = &body.regions()[r];
            let volume = mesh.volumes()[t];
            let (mut am, mut zm, mut za) = (Mat3::zeros(), Mat3::zeros(), 0.0);
            for (k, &vtx) in tet.iter().enumerate() {
                am += vertex(a, vtx) * grads[k].transpose();
                zm += vertex(z, vtx) * grads[k].transpose();
                za += vertex(z, vtx).dot(&vertex(a, vtx));
            }
            if self.dynamic {
                out[3 * r + 2] += diag * volume / 4.0 * za;
            }
            let (fz, fy) = self.gradients(t, y);
            let a9 = Vec9::from_column_slice(am.as_slice());
            let z9 = Vec9::from_column_slice(zm.as_slice());
            for (k, lame) in unit.iter().enumerate() {
                let mut c = region.material.model.tangent(&fz, lame) * self.weight;
                if !self.start_strains.is_empty() {
                    c += damping::tangent(&fy, &self.start_strains[t], lame, self.viscous());
                }
                lame_bar[r][k] += volume * z9.dot(&(c * a9));
            }
            if !self.start_strains.is_empty() {
                let cd = damping::tangent(&fy, &self.start_strains[t], &region.lame, 1.0 / h);
                out[3 * nr + 1] += volume * z9.dot(&(cd * a9));
            }
        }
        if self.dynamic {
            for (i, &m) in body.masses().iter().enumerate() {
                out[3 * nr] += m * vertex(z, i).dot(&vertex(a, i)) / h;
            }
        }
        for (r, region) in body.regions().iter().enumerate() {
            let jac = Lame::young_poisson_jacobian(region.material.youngs_modulus, region.material.poisson);
            let [mb, lb] = lame_bar[r];
            out[3 * r] += mb * jac[(0, 0)] + lb * jac[(1, 0)];
            out[3 * r + 1] += mb * jac[(0, 1)] + lb * jac[(1, 1)];
        }
        out
    }

    /// Φ at `y` alone (for the line search).
    pub fn energy(&self, y: &[f64]) -> f64 {
        let mesh = self.body.mesh();
        let elastic: f64 =
            (0..mesh.num_tets()).map(|t| mesh.volumes()[t] * self.element_energy(t, &self.gradients(t, y))).sum();
        self.inertial_energy(y, None) + elastic
    }

    /// The energy density of tet `t` at its gradients, `Ψ(F(z))/w + Ψ_d(F(y))`.
    fn element_energy(&self, t: usize, (fz, fy): &(Mat3, Mat3)) -> f64 {
        let region = &self.body.regions()[self.body.element_regions()[t]];
        let mut psi = region.material.model.energy(fz, &region.lame) / self.weight;
        if !self.start_strains.is_empty() {
            psi += damping::energy(fy, &self.start_strains[t], &region.lame, self.viscous());
        }
        psi
    }

    /// The vertex terms of Φ (inertia, mass damping, gravity, forces); their gradient is
    /// written into `gradient` when given.
    fn inertial_energy(&self, y: &[f64], mut gradient: Option<&mut Vec<f64>>) -> f64 {
        let body = self.body;
        let (h, alpha, g) = (self.h, body.damping().mass, body.gravity());
        let mut e = 0.0;
        for (i, &m) in body.masses().iter().enumerate() {
            for k in 0..3 {
                let d = 3 * i + k;
                if !self.dynamic {
                    e -= (m * g[k] + self.u[d]) * y[d];
                    if let Some(grad) = gradient.as_deref_mut() {
                        grad[d] = -m * g[k] - self.u[d];
                    }
                    continue;
                }
                let (dx, inertial) = (y[d] - self.x[d], y[d] - self.x[d] - h * self.v[d]);
                let c = self.inertia;
                e += m * (c * inertial * inertial / (2.0 * h * h) + alpha * dx * dx / (2.0 * h) - g[k] * y[d])
                    - self.u[d] * y[d];
                if let Some(grad) = gradient.as_deref_mut() {
                    grad[d] = m * (c * inertial / (h * h) + alpha * dx / h - g[k]) - self.u[d];
                }
            }
        }
        e
    }
}

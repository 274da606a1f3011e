//! A soft body: a [`TetMesh`] with a material per region, lumped vertex masses,
//! Rayleigh-type damping, gravity and pinned degrees of freedom. Immutable; its
//! differentiable parameters θ are addressed by name ([`SoftBody::param_names`]).
//!
//! The state is the vertex positions `x` and velocities `v` (3 per vertex, vertex-major:
//! `x[3i + k]`); the controls are vertex forces `u` (N, same layout); a pinned degree of
//! freedom follows a kinematic target (its position at the end of the step).
//!
//! Masses are lumped: `m_i = Σ_{e ∋ i} ρ_e V_e / 4`. Damping has a mass part `α M` and a
//! stiffness part `β`: the viscous potential of the Green strain rate (see
//! `damping.rs`), which equals Rayleigh's `β K` for small strains and, unlike `β K` of
//! a fixed stiffness, never damps a rigid motion.

use super::material::{Lame, MaterialModel};
use super::mesh::TetMesh;
use super::sparse::HessianPattern;
use crate::error::{Error, Result, SoftError};
use crate::math::Vec3;
use nalgebra::DVector;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The material of a region: a constitutive model, Young's modulus `E` (Pa), Poisson's
/// ratio `ν` and density `ρ` (kg/m³).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftMaterial {
    /// The constitutive model.
    pub model: MaterialModel,
    /// Young's modulus E (Pa), finite and positive.
    pub youngs_modulus: f64,
    /// Poisson's ratio ν in (−1, 0.5).
    pub poisson: f64,
    /// Density ρ (kg/m³), finite and positive.
    pub density: f64,
}

impl SoftMaterial {
    /// A material of `model` with `E`, `ν` and `ρ`.
    pub fn new(model: MaterialModel, youngs_modulus: f64, poisson: f64, density: f64) -> SoftMaterial {
        SoftMaterial { model, youngs_modulus, poisson, density }
    }

    fn lame(&self, what: &str) -> Result<Lame> {
        let lame = Lame::from_young_poisson(self.youngs_modulus, self.poisson, what)?;
        if !(self.density.is_finite() && self.density > 0.0) {
            return Err(SoftError::InvalidMaterial {
                region: what.to_string(),
                reason: format!("the density must be finite and positive, got {}", self.density),
            }
            .into());
        }
        Ok(lame)
    }
}

/// Damping: the force `−α M v` (α in 1/s) and the viscous stress of the Green strain
/// rate with the element's elastic moduli times β (s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftDamping {
    /// The mass-proportional coefficient α (1/s), finite and ≥ 0.
    pub mass: f64,
    /// The stiffness-proportional coefficient β (s), finite and ≥ 0.
    pub stiffness: f64,
}

/// One region of a soft body: its tag, material and the Lamé parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftRegion {
    /// The region tag of the mesh.
    pub tag: u32,
    /// Its material.
    pub material: SoftMaterial,
    /// The small-strain Lamé parameters of the material.
    pub lame: Lame,
}

/// A soft body, validated and immutable. Build it with [`SoftBody::builder`].
#[derive(Clone, Debug)]
pub struct SoftBody {
    mesh: Arc<TetMesh>,
    regions: Vec<SoftRegion>,
    element_region: Vec<usize>,
    damping: SoftDamping,
    gravity: Vec3,
    pinned: Vec<usize>,
    masses: Vec<f64>,
    pattern: Arc<HessianPattern>,
}

/// Builds a [`SoftBody`]: a material for every region (a default and overrides), damping,
/// gravity and pins.
#[derive(Clone, Debug)]
pub struct SoftBodyBuilder {
    mesh: Arc<TetMesh>,
    material: SoftMaterial,
    overrides: Vec<(u32, SoftMaterial)>,
    damping: SoftDamping,
    gravity: Vec3,
    pinned: Vec<usize>,
}

impl SoftBodyBuilder {
    /// Region `tag` gets `material` (other regions keep the default).
    pub fn region_material(mut self, tag: u32, material: SoftMaterial) -> Self {
        self.overrides.retain(|(t, _)| *t != tag);
        self.overrides.push((tag, material));
        self
    }

    /// The damping coefficients (default none).
    pub fn damping(mut self, damping: SoftDamping) -> Self {
        self.damping = damping;
        self
    }

    /// The gravity acceleration (m/s², default `(0, 0, −9.81)`).
    pub fn gravity(mut self, gravity: Vec3) -> Self {
        self.gravity = gravity;
        self
    }

    /// Pins all three degrees of freedom of each of `vertices`.
    pub fn pin_vertices(mut self, vertices: &[usize]) -> Self {
        self.pinned.extend(vertices.iter().flat_map(|&v| (0..3).map(move |k| 3 * v + k)));
        self
    }

    /// Pins single degrees of freedom `(vertex, axis)` (axis 0, 1, 2 for x, y, z).
    pub fn pin_dofs(mut self, dofs: &[(usize, usize)]) -> Self {
        self.pinned.extend(dofs.iter().map(|&(v, k)| if k < 3 { 3 * v + k } else { usize::MAX }));
        self
    }

    /// Validates and builds. Errors: a region override for a tag the mesh lacks, an
    /// invalid material (E, ν, ρ), negative or non-finite damping, non-finite gravity,
    /// a pinned vertex or axis out of range.
    pub fn build(self) -> Result<SoftBody> {
        self.build_with(None)
    }

    /// [`SoftBodyBuilder::build`], reusing `pattern` when the pins are unchanged.
    fn build_with(self, pattern: Option<(&[usize], &Arc<HessianPattern>)>) -> Result<SoftBody> {
        let mesh = self.mesh;
        let tags = mesh.region_tags();
        if let Some((tag, _)) = self.overrides.iter().find(|(t, _)| !tags.contains(t)) {
            return Err(Error::InvalidInput(format!("soft body: no region {tag} in the mesh (its regions: {tags:?})")));
        }
        let regions = tags
            .iter()
            .map(|&tag| {
                let material = self.overrides.iter().find(|(t, _)| *t == tag).map(|(_, m)| *m).unwrap_or(self.material);
                let lame = material.lame(&format!("region {tag}"))?;
                Ok(SoftRegion { tag, material, lame })
            })
            .collect::<Result<Vec<_>>>()?;
        let element_region = mesh.regions().iter().map(|t| tags.binary_search(t).unwrap_or(0)).collect::<Vec<_>>();
        for (name, value) in [("mass", self.damping.mass), ("stiffness", self.damping.stiffness)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(Error::InvalidInput(format!(
                    "soft body: the {name} damping must be finite and >= 0, got {value}"
                )));
            }
        }
        if !self.gravity.iter().all(|g| g.is_finite()) {
            return Err(Error::InvalidInput(format!("soft body: gravity must be finite, got {:?}", self.gravity)));
        }
        let ndof = 3 * mesh.num_vertices();
        let mut pinned = self.pinned;
        if let Some(&bad) = pinned.iter().find(|&&d| d >= ndof) {
            let what =
                if bad == usize::MAX { "an axis outside 0..3".to_string() } else { format!("vertex {}", bad / 3) };
            return Err(Error::InvalidInput(format!(
                "soft body: a pin names {what}, but the mesh has {} vertices",
                mesh.num_vertices()
            )));
        }
        pinned.sort_unstable();
        pinned.dedup();
        let masses = lumped_masses(&mesh, &regions, &element_region);
        let pattern = match pattern {
            Some((pins, p)) if pins == pinned.as_slice() => p.clone(),
            _ => Arc::new(HessianPattern::new(&mesh, &pinned)?),
        };
        Ok(SoftBody {
            mesh,
            regions,
            element_region,
            damping: self.damping,
            gravity: self.gravity,
            pinned,
            masses,
            pattern,
        })
    }
}

/// `m_i = Σ_{e ∋ i} ρ_e V_e / 4`.
fn lumped_masses(mesh: &TetMesh, regions: &[SoftRegion], element_region: &[usize]) -> Vec<f64> {
    let mut m = vec![0.0; mesh.num_vertices()];
    for (t, tet) in mesh.tets().iter().enumerate() {
        let share = regions[element_region[t]].material.density * mesh.volumes()[t] / 4.0;
        for &v in tet {
            m[v] += share;
        }
    }
    m
}

impl SoftBody {
    /// A builder for a body of `mesh`, every region of `material`, no damping, standard
    /// gravity and no pins.
    pub fn builder(mesh: TetMesh, material: SoftMaterial) -> SoftBodyBuilder {
        SoftBodyBuilder {
            mesh: Arc::new(mesh),
            material,
            overrides: Vec::new(),
            damping: SoftDamping::default(),
            gravity: Vec3::new(0.0, 0.0, -9.81),
            pinned: Vec::new(),
        }
    }

    /// The builder that rebuilds this body (to change a material, the pins, ...).
    pub fn to_builder(&self) -> SoftBodyBuilder {
        let first = self.regions[0].material;
        SoftBodyBuilder {
            mesh: self.mesh.clone(),
            material: first,
            overrides: self.regions.iter().map(|r| (r.tag, r.material)).collect(),
            damping: self.damping,
            gravity: self.gravity,
            pinned: self.pinned.clone(),
        }
    }

    /// The rest mesh.
    pub fn mesh(&self) -> &TetMesh {
        &self.mesh
    }

    /// The regions (ascending tags) with their materials.
    pub fn regions(&self) -> &[SoftRegion] {
        &self.regions
    }

    /// The index into [`SoftBody::regions`] of every tet.
    pub fn element_regions(&self) -> &[usize] {
        &self.element_region
    }

    /// The damping coefficients.
    pub fn damping(&self) -> SoftDamping {
        self.damping
    }

    /// The gravity acceleration.
    pub fn gravity(&self) -> Vec3 {
        self.gravity
    }

    /// The pinned degrees of freedom (`3·vertex + axis`, ascending); the step's targets
    /// follow this order.
    pub fn pinned_dofs(&self) -> &[usize] {
        &self.pinned
    }

    /// The lumped mass of every vertex (kg).
    pub fn masses(&self) -> &[f64] {
        &self.masses
    }

    /// The total mass (kg).
    pub fn total_mass(&self) -> f64 {
        self.masses.iter().sum()
    }

    /// The number of degrees of freedom (3 per vertex).
    pub fn ndof(&self) -> usize {
        3 * self.mesh.num_vertices()
    }

    /// The sparsity pattern of the step's Hessian over the free degrees of freedom,
    /// with its symbolic factorization (computed once per body).
    pub(crate) fn pattern(&self) -> &HessianPattern {
        &self.pattern
    }

    /// The rest positions as a state vector.
    pub fn rest_positions(&self) -> DVector<f64> {
        DVector::from_iterator(self.ndof(), self.mesh.vertices().iter().flat_map(|p| [p.x, p.y, p.z]))
    }

    /// The elastic forces `f = −∂(Σ_e V_e Ψ)/∂x` on every vertex at positions `x` (N; 3
    /// per vertex; no damping). Errors: size, non-finite positions.
    pub fn elastic_forces(&self, x: &DVector<f64>) -> Result<DVector<f64>> {
        crate::error::check_vector("soft positions", x.as_slice(), self.ndof())?;
        let mut f = DVector::zeros(self.ndof());
        for t in 0..self.mesh.num_tets() {
            let region = &self.regions[self.element_region[t]];
            let def = self.mesh.deformation_gradient_of(t, x.as_slice());
            let p = region.material.model.stress(&def, &region.lame) * self.mesh.volumes()[t];
            for (a, &v) in self.mesh.tets()[t].iter().enumerate() {
                let fa = p * self.mesh.shape_gradients(t)[a];
                for k in 0..3 {
                    f[3 * v + k] -= fa[k];
                }
            }
        }
        Ok(f)
    }

    /// The elastic energy `Σ_e V_e Ψ(F_e)` at positions `x` (J). Errors: size,
    /// non-finite positions.
    pub fn elastic_energy(&self, x: &DVector<f64>) -> Result<f64> {
        crate::error::check_vector("soft positions", x.as_slice(), self.ndof())?;
        Ok((0..self.mesh.num_tets())
            .map(|t| {
                let region = &self.regions[self.element_region[t]];
                let def = self.mesh.deformation_gradient_of(t, x.as_slice());
                self.mesh.volumes()[t] * region.material.model.energy(&def, &region.lame)
            })
            .sum())
    }

    /// The names of the differentiable parameters θ, in the order of
    /// [`SoftBody::param_values`]: per region (ascending tag)
    /// `youngs_modulus:TAG`, `poisson:TAG`, `density:TAG`; then `damping_mass` and
    /// `damping_stiffness`.
    pub fn param_names(&self) -> Vec<String> {
        let mut names = Vec::with_capacity(3 * self.regions.len() + 2);
        for r in &self.regions {
            names.push(format!("youngs_modulus:{}", r.tag));
            names.push(format!("poisson:{}", r.tag));
            names.push(format!("density:{}", r.tag));
        }
        names.push("damping_mass".into());
        names.push("damping_stiffness".into());
        names
    }

    /// The parameter values θ (see [`SoftBody::param_names`]).
    pub fn param_values(&self) -> DVector<f64> {
        let mut theta = Vec::with_capacity(3 * self.regions.len() + 2);
        for r in &self.regions {
            theta.extend([r.material.youngs_modulus, r.material.poisson, r.material.density]);
        }
        theta.extend([self.damping.mass, self.damping.stiffness]);
        DVector::from_vec(theta)
    }

    /// The same body with parameters θ (see [`SoftBody::param_names`]). Errors: length,
    /// and every validation of the builder.
    pub fn with_param_values(&self, theta: &[f64]) -> Result<SoftBody> {
        let n = 3 * self.regions.len() + 2;
        if theta.len() != n {
            return Err(Error::Dimension { what: "soft body parameters", expected: n, got: theta.len() });
        }
        let mut b = self.to_builder();
        for (k, r) in self.regions.iter().enumerate() {
            let m = SoftMaterial {
                youngs_modulus: theta[3 * k],
                poisson: theta[3 * k + 1],
                density: theta[3 * k + 2],
                ..r.material
            };
            b = b.region_material(r.tag, m);
        }
        b = b.damping(SoftDamping { mass: theta[n - 2], stiffness: theta[n - 1] });
        b.build_with(Some((&self.pinned, &self.pattern)))
    }
}

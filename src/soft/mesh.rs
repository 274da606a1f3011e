//! The tetrahedral mesh of a soft body at rest: vertex positions, linear tetrahedra
//! (four vertices, positive orientation), a region tag per element, and what every
//! element's deformation gradient needs at rest.
//!
//! With rest positions `X_0..X_3` and current positions `x_0..x_3` of an element,
//! `D_m = [X_1 − X_0, X_2 − X_0, X_3 − X_0]`, `D_s` likewise, and the deformation
//! gradient is `F = D_s D_m⁻¹ = Σ_a x_a ⊗ ∇N_a` with the constant shape-function
//! gradients `∇N_a` (rows of `D_m⁻¹` for `a = 1..3`, `∇N_0 = −Σ_{a≥1} ∇N_a`). The rest
//! volume is `det(D_m) / 6 > 0`.
//!
//! Validation ([`TetMesh::new`]) refuses, naming the element or vertex: non-finite
//! positions, indices out of range, a vertex named twice by one tet, degenerate tets
//! (`|V| ≤ 1e-9 ℓ³`, `ℓ` the element's longest edge), inverted tets (negative volume),
//! vertices used by no tet, and coinciding vertices (within `1e-12` of the bounding box
//! diagonal).

use crate::error::{Result, SoftError};
use crate::math::{Mat3, Vec3};
use std::collections::HashMap;

/// Relative volume below which a tet is degenerate: `|V| ≤ DEGENERATE · ℓ³`.
const DEGENERATE: f64 = 1e-9;
/// Distance (relative to the bounding-box diagonal) within which vertices coincide.
const COINCIDENT: f64 = 1e-12;

/// A validated tetrahedral mesh at rest. Immutable.
#[derive(Clone, Debug, PartialEq)]
pub struct TetMesh {
    vertices: Vec<Vec3>,
    tets: Vec<[usize; 4]>,
    regions: Vec<u32>,
    volumes: Vec<f64>,
    gradients: Vec<[Vec3; 4]>,
}

impl TetMesh {
    /// A mesh of rest `vertices` and `tets` (each four vertex indices, positively
    /// oriented: `(X_1 − X_0) · ((X_2 − X_0) × (X_3 − X_0)) > 0`), all in region 0.
    /// Errors ([`SoftError`]): see the module documentation.
    pub fn new(vertices: Vec<Vec3>, tets: Vec<[usize; 4]>) -> Result<TetMesh> {
        let n = tets.len();
        TetMesh::with_regions(vertices, tets, vec![0; n])
    }

    /// [`TetMesh::new`] with a region tag per tet (materials are given per region).
    /// Errors: as [`TetMesh::new`], and a region list of another length.
    pub fn with_regions(vertices: Vec<Vec3>, tets: Vec<[usize; 4]>, regions: Vec<u32>) -> Result<TetMesh> {
        if regions.len() != tets.len() {
            return Err(crate::Error::Dimension { what: "tet regions", expected: tets.len(), got: regions.len() });
        }
        if tets.is_empty() {
            return Err(SoftError::Empty.into());
        }
        if let Some((vertex, p)) = vertices.iter().enumerate().find(|(_, p)| !p.iter().all(|c| c.is_finite())) {
            return Err(SoftError::NonFiniteVertex { vertex, position: [p.x, p.y, p.z] }.into());
        }
        let mut used = vec![false; vertices.len()];
        let mut volumes = Vec::with_capacity(tets.len());
        let mut gradients = Vec::with_capacity(tets.len());
        for (t, tet) in tets.iter().enumerate() {
            for (k, &v) in tet.iter().enumerate() {
                if v >= vertices.len() {
                    return Err(SoftError::VertexOutOfRange { tet: t, vertex: v, vertices: vertices.len() }.into());
                }
                if tet[..k].contains(&v) {
                    return Err(SoftError::RepeatedVertex { tet: t, vertex: v }.into());
                }
                used[v] = true;
            }
            let x = tet.map(|v| vertices[v]);
            let dm = Mat3::from_columns(&[x[1] - x[0], x[2] - x[0], x[3] - x[0]]);
            let volume = dm.determinant() / 6.0;
            let longest = (0..4)
                .flat_map(|a| (a + 1..4).map(move |b| (a, b)))
                .map(|(a, b)| (x[a] - x[b]).norm())
                .fold(0.0, f64::max);
            let threshold = DEGENERATE * longest.powi(3);
            if volume.abs() <= threshold {
                return Err(SoftError::DegenerateTet { tet: t, volume, threshold }.into());
            }
            if volume < 0.0 {
                return Err(SoftError::InvertedTet { tet: t, volume, vertices: *tet }.into());
            }
            let inv = dm.try_inverse().ok_or(SoftError::DegenerateTet { tet: t, volume, threshold })?;
            let g1 = inv.row(0).transpose();
            let g2 = inv.row(1).transpose();
            let g3 = inv.row(2).transpose();
            gradients.push([-(g1 + g2 + g3), g1, g2, g3]);
            volumes.push(volume);
        }
        if let Some(vertex) = used.iter().position(|u| !u) {
            return Err(SoftError::UnusedVertex { vertex }.into());
        }
        check_coincident(&vertices)?;
        Ok(TetMesh { vertices, tets, regions, volumes, gradients })
    }

    /// The rest positions.
    pub fn vertices(&self) -> &[Vec3] {
        &self.vertices
    }

    /// The tetrahedra (vertex indices, positively oriented).
    pub fn tets(&self) -> &[[usize; 4]] {
        &self.tets
    }

    /// The region tag of every tet.
    pub fn regions(&self) -> &[u32] {
        &self.regions
    }

    /// The distinct region tags, ascending.
    pub fn region_tags(&self) -> Vec<u32> {
        let mut tags = self.regions.clone();
        tags.sort_unstable();
        tags.dedup();
        tags
    }

    /// The number of vertices.
    pub fn num_vertices(&self) -> usize {
        self.vertices.len()
    }

    /// The number of tets.
    pub fn num_tets(&self) -> usize {
        self.tets.len()
    }

    /// The rest volume of every tet (positive).
    pub fn volumes(&self) -> &[f64] {
        &self.volumes
    }

    /// The shape-function gradients `∇N_a` (rest frame) of tet `t`:
    /// `F = Σ_a x_a ⊗ ∇N_a`. Panics when `t` is out of range.
    pub fn shape_gradients(&self, t: usize) -> &[Vec3; 4] {
        &self.gradients[t]
    }

    /// The deformation gradient of tet `t` at positions `x` given as a state vector
    /// (3 per vertex, vertex-major). Panics when `t` or `x` is out of range.
    pub fn deformation_gradient_of(&self, t: usize, x: &[f64]) -> Mat3 {
        self.gradient_at(t, |v| Vec3::new(x[3 * v], x[3 * v + 1], x[3 * v + 2]))
    }

    /// The deformation gradient of tet `t` at positions `x` (one per vertex).
    pub fn deformation_gradient(&self, t: usize, x: &[Vec3]) -> Mat3 {
        self.gradient_at(t, |v| x[v])
    }

    /// `F = Σ_a x_a ⊗ ∇N_a` of tet `t` with vertex `v` at `position(v)`.
    fn gradient_at(&self, t: usize, position: impl Fn(usize) -> Vec3) -> Mat3 {
        let g = &self.gradients[t];
        let mut f = Mat3::zeros();
        for (a, &v) in self.tets[t].iter().enumerate() {
            f += position(v) * g[a].transpose();
        }
        f
    }
}

/// Refuses two vertices within `COINCIDENT` of the bounding-box diagonal of each other.
fn check_coincident(vertices: &[Vec3]) -> Result<()> {
    let (mut lo, mut hi) = (vertices[0], vertices[0]);
    for p in vertices {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    let tol = COINCIDENT * (hi - lo).norm();
    if tol == 0.0 {
        return Ok(());
    }
    let cell = |p: &Vec3| -> [i64; 3] { [0, 1, 2].map(|k| ((p[k] - lo[k]) / tol).floor() as i64) };
    let mut grid: HashMap<[i64; 3], Vec<usize>> = HashMap::with_capacity(vertices.len());
    for (i, p) in vertices.iter().enumerate() {
        let c = cell(p);
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    if let Some(others) = grid.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) {
                        if let Some(&j) = others.iter().find(|&&j| (vertices[j] - p).norm() <= tol) {
                            return Err(
                                SoftError::DuplicateVertex { first: j, second: i, position: [p.x, p.y, p.z] }.into()
                            );
                        }
                    }
                }
            }
        }
        grid.entry(c).or_default().push(i);
    }
    Ok(())
}

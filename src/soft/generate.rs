//! Structured tetrahedral meshes: an axis-aligned box ([`box_mesh`]) and a square bar
//! ([`rod_mesh`]), and vertex selection ([`vertices_where`]) for boundary conditions.
//!
//! The box is split into `nx × ny × nz` hexahedral cells and every cell into six tets by
//! the Kuhn (Freudenthal) decomposition: the six monotone lattice paths from the cell's
//! lowest corner to its highest one along the axis directions, one tet per ordering of the
//! axes. Every cell face is then cut along the diagonal through its lowest and highest
//! corners, the same on both sides of the face, so the mesh is conforming without
//! alternating the split from cell to cell. All tets have the same volume (a sixth of a
//! cell) and positive orientation.

use crate::error::{Error, Result};
use crate::math::Vec3;
use crate::soft::mesh::TetMesh;

/// The six tets of a unit cell, as corner numbers `dx + 2 dy + 4 dz` (corner offsets in
/// cells along x, y and z). Tet `(a, b, c)` walks from corner 0 along axis `a`, then `b`,
/// then `c` to corner 7; the odd permutations have their middle vertices swapped so that
/// all six are positively oriented.
const KUHN: [[usize; 4]; 6] = [
    // x, y, z (even)
    [0, 1, 3, 7],
    // y, z, x (even)
    [0, 2, 6, 7],
    // z, x, y (even)
    [0, 4, 5, 7],
    // x, z, y (odd: middle swapped)
    [0, 5, 1, 7],
    // y, x, z (odd)
    [0, 3, 2, 7],
    // z, y, x (odd)
    [0, 6, 4, 7],
];

/// A tetrahedral mesh of the axis-aligned box `[origin, origin + extent]`, split into
/// `cells[0] × cells[1] × cells[2]` hexahedral cells of six tets each (Kuhn decomposition,
/// see the module documentation), all in region 0.
///
/// Vertex `(i, j, k)` (`0 ≤ i ≤ nx`, …) sits at `origin + extent ⊙ (i/nx, j/ny, k/nz)` and
/// has index `i + (nx + 1) (j + (ny + 1) k)`; tets are listed cell by cell (x fastest), six
/// per cell. The mesh has `(nx+1)(ny+1)(nz+1)` vertices and `6 nx ny nz` tets.
///
/// Errors ([`Error::InvalidInput`]): a zero cell count, a non-finite or non-positive
/// extent, a non-finite origin, or counts whose vertex or tet numbers overflow `usize`.
pub fn box_mesh(cells: [usize; 3], extent: Vec3, origin: Vec3) -> Result<TetMesh> {
    if cells.contains(&0) {
        return Err(Error::InvalidInput(format!("box_mesh: cell counts {cells:?} must all be at least 1")));
    }
    if !extent.iter().all(|e| e.is_finite() && *e > 0.0) {
        return Err(Error::InvalidInput(format!(
            "box_mesh: extent [{}, {}, {}] must be finite and positive",
            extent.x, extent.y, extent.z
        )));
    }
    if !origin.iter().all(|o| o.is_finite()) {
        return Err(Error::InvalidInput(format!(
            "box_mesh: origin [{}, {}, {}] must be finite",
            origin.x, origin.y, origin.z
        )));
    }
    let [nx, ny, nz] = cells;
    let too_many = || Error::InvalidInput(format!("box_mesh: {cells:?} cells are too many to index"));
    let num_vertices =
        [nx, ny, nz].iter().try_fold(1usize, |n, &c| n.checked_mul(c.checked_add(1)?)).ok_or_else(too_many)?;
    let num_tets =
        nx.checked_mul(ny).and_then(|n| n.checked_mul(nz)).and_then(|n| n.checked_mul(6)).ok_or_else(too_many)?;

    let index = |i: usize, j: usize, k: usize| i + (nx + 1) * (j + (ny + 1) * k);
    let mut vertices = Vec::with_capacity(num_vertices);
    for k in 0..=nz {
        for j in 0..=ny {
            for i in 0..=nx {
                let f = Vec3::new(i as f64 / nx as f64, j as f64 / ny as f64, k as f64 / nz as f64);
                vertices.push(origin + extent.component_mul(&f));
            }
        }
    }
    let mut tets = Vec::with_capacity(num_tets);
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let corner = |c: usize| index(i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
                tets.extend(KUHN.iter().map(|t| t.map(corner)));
            }
        }
    }
    TetMesh::new(vertices, tets)
}

/// A bar of square cross-section along `+x`: `x ∈ [0, length]`, `y, z ∈ [−width/2,
/// width/2]` (the cross-section centred on the x axis), with `cells_along` cells along x
/// and `cells_across` along y and z ([`box_mesh`] with that extent and origin, same
/// vertex numbering). Errors: as [`box_mesh`] (zero cells, non-finite or non-positive
/// `length` or `width`).
pub fn rod_mesh(cells_along: usize, cells_across: usize, length: f64, width: f64) -> Result<TetMesh> {
    box_mesh(
        [cells_along, cells_across, cells_across],
        Vec3::new(length, width, width),
        Vec3::new(0.0, -0.5 * width, -0.5 * width),
    )
}

/// The indices (ascending) of the rest vertices of `mesh` for which `pred` holds, e.g.
/// `vertices_where(&mesh, |p| p.x <= 1e-9)` for the vertices of a clamped end.
pub fn vertices_where(mesh: &TetMesh, pred: impl Fn(&Vec3) -> bool) -> Vec<usize> {
    mesh.vertices().iter().enumerate().filter(|(_, p)| pred(p)).map(|(i, _)| i).collect()
}

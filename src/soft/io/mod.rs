//! Tetrahedral mesh files in and out: Gmsh `.msh` 4.1 ([`load_msh`]), VTK unstructured
//! grids ([`load_vtk`]: legacy `.vtk` and ASCII XML `.vtu`), TetGen `.node`/`.ele`
//! ([`load_tetgen`]); VTK output of a deformed mesh ([`write_vtu`]) and of a trajectory
//! ([`VtkSeries`], a ParaView `.pvd` collection of `.vtu` frames).
//!
//! # What every loader does
//!
//! * Only linear tetrahedra make the mesh. Lower-dimensional cells (points, lines,
//!   triangles, quadrangles: boundary annotations) are ignored; any other volume cell
//!   (second-order tets, hexahedra, prisms, pyramids, …) is refused with
//!   [`LoadError::Unsupported`] rather than silently dropped.
//! * Vertices are numbered compactly in file order, keeping only those that some tet
//!   uses (nodes of ignored cells only, or isolated points, are dropped). When every node
//!   is used the indices are the file's node order, 0-based.
//! * Tets keep their file order (tets only, other cells skipped), so tet `t` of an error
//!   such as [`SoftError::InvertedTet`] is the `t`-th tetrahedron of the file, 0-based
//!   (vertex numbers in such errors are the compacted ones).
//! * Orientation: all three formats store positively oriented tets,
//!   `(X₁ − X₀) · ((X₂ − X₀) × (X₃ − X₀)) > 0` (Gmsh's and VTK's reference tets, and
//!   TetGen's output). A file whose tets are *all* negatively oriented (none positive, at
//!   least one negative) is taken to use the opposite convention, and every tet is read
//!   with its vertices 1 and 2 swapped. A file with mixed orientations is not repaired:
//!   [`TetMesh`] validation names the first inverted tet.
//! * The mesh is then validated by [`TetMesh::with_regions`]; its [`SoftError`]s come
//!   back as they are (match them through [`crate::Error::root`]).
//! * Every [`LoadError`] names the file, and the line or element where it can. Malformed
//!   input never panics: counts, indices and numbers are checked before use, the
//!   third-party parsers (`mshio`, `vtkio`) are guarded against the inputs known to make
//!   them panic or allocate without bound, and a panic that still escapes them is turned
//!   into a [`LoadError::Malformed`].
//!
//! [`SoftError`]: crate::error::SoftError
//! [`SoftError::InvertedTet`]: crate::error::SoftError::InvertedTet

mod msh;
mod tetgen;
mod vtk;

pub use msh::{load_msh, parse_msh};
pub use tetgen::{load_tetgen, parse_tetgen};
pub use vtk::{load_vtk, parse_vtk, write_vtu, VtkSeries};

use crate::error::{Error, LoadError, Result};
use crate::math::{Mat3, Vec3};
use crate::soft::mesh::TetMesh;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// The bytes of `path`, or [`LoadError::Io`].
fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| LoadError::Io { path: path.display().to_string(), reason: e.to_string() }.into())
}

/// A [`LoadError::Malformed`].
fn malformed(file: &str, element: impl Into<String>, reason: impl Into<String>) -> Error {
    LoadError::Malformed { file: file.to_string(), element: element.into(), reason: reason.into() }.into()
}

/// A [`LoadError::Unsupported`].
fn unsupported(file: &str, element: impl Into<String>, reason: impl Into<String>) -> Error {
    LoadError::Unsupported { file: file.to_string(), element: element.into(), reason: reason.into() }.into()
}

/// Runs a third-party parser, turning a panic inside it into [`LoadError::Malformed`].
fn guarded<T>(file: &str, parser: &str, f: impl FnOnce() -> T) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        malformed(file, "file", format!("{parser} failed on this input ({detail})"))
    })
}

/// The 1-based line of byte `offset` of `bytes`.
fn line_of(bytes: &[u8], offset: usize) -> usize {
    1 + bytes[..offset.min(bytes.len())].iter().filter(|&&b| b == b'\n').count()
}

/// A region tag from a file's number: finite, rounded to the nearest integer, in
/// `0..=u32::MAX`.
fn region_tag(value: f64, file: &str, element: impl FnOnce() -> String) -> Result<u32> {
    let r = value.round();
    if value.is_finite() && (0.0..=u32::MAX as f64).contains(&r) {
        Ok(r as u32)
    } else {
        Err(malformed(file, element(), format!("region tag {value} is not an integer in 0..={}", u32::MAX)))
    }
}

/// The signed volume of the tet `t` of `nodes` (indices in range).
fn signed_volume(nodes: &[Vec3], t: &[usize; 4]) -> f64 {
    let x = t.map(|v| nodes[v]);
    Mat3::from_columns(&[x[1] - x[0], x[2] - x[0], x[3] - x[0]]).determinant() / 6.0
}

/// Builds the mesh from a file's nodes and tets (indices into `nodes`, checked by the
/// caller): drops the nodes no tet uses (renumbering in file order), applies the
/// orientation rule of the module documentation, and validates.
fn assemble(file: &str, nodes: Vec<Vec3>, mut tets: Vec<[usize; 4]>, regions: Vec<u32>) -> Result<TetMesh> {
    if tets.is_empty() {
        return Err(malformed(file, "cells", "the file has no linear tetrahedra"));
    }
    debug_assert!(tets.iter().flatten().all(|&v| v < nodes.len()));
    let any_positive = tets.iter().any(|t| signed_volume(&nodes, t) > 0.0);
    let any_negative = tets.iter().any(|t| signed_volume(&nodes, t) < 0.0);
    if !any_positive && any_negative {
        for t in &mut tets {
            t.swap(1, 2);
        }
    }
    let mut new_index = vec![usize::MAX; nodes.len()];
    for &v in tets.iter().flatten() {
        new_index[v] = 0;
    }
    let mut vertices = Vec::with_capacity(nodes.len());
    for (i, p) in nodes.into_iter().enumerate() {
        if new_index[i] == 0 {
            new_index[i] = vertices.len();
            vertices.push(p);
        }
    }
    for t in &mut tets {
        *t = t.map(|v| new_index[v]);
    }
    TetMesh::with_regions(vertices, tets, regions)
}

/// `bytes` as UTF-8 text, or [`LoadError::Malformed`] naming the first bad byte's line.
fn utf8<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        malformed(file, format!("line {}", line_of(bytes, at)), format!("not UTF-8 text (byte {at})"))
    })
}

/// Parses every item of `tokens` as `T`, naming the first that fails.
fn parse_all<T: std::str::FromStr>(
    tokens: &[&str],
    file: &str,
    element: impl Fn() -> String,
    what: &str,
) -> Result<Vec<T>> {
    tokens
        .iter()
        .map(|t| t.parse::<T>().map_err(|_| malformed(file, element(), format!("'{t}' is not a valid {what}"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_tet() -> (Vec<Vec3>, [usize; 4]) {
        (vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()], [0, 1, 2, 3])
    }

    #[test]
    fn all_negative_files_are_flipped_mixed_ones_are_not() {
        let (nodes, t) = unit_tet();
        let flipped = [t[0], t[2], t[1], t[3]];
        let mesh = assemble("f", nodes.clone(), vec![flipped], vec![0]).unwrap();
        assert!(mesh.volumes()[0] > 0.0);
        let mut more = nodes.clone();
        more.push(Vec3::new(1.0, 1.0, 1.0));
        let err = assemble("f", more, vec![t, [1, 3, 2, 4]], vec![0, 0]).unwrap_err();
        assert!(matches!(err.root(), Error::Soft(crate::SoftError::InvertedTet { tet: 1, .. })), "{err}");
    }

    #[test]
    fn unused_nodes_are_dropped_in_file_order() {
        let (mut nodes, _) = unit_tet();
        nodes.insert(0, Vec3::new(5.0, 5.0, 5.0));
        let mesh = assemble("f", nodes, vec![[1, 2, 3, 4]], vec![7]).unwrap();
        assert_eq!(mesh.tets(), &[[0, 1, 2, 3]]);
        assert_eq!(mesh.vertices()[0], Vec3::zeros());
        assert_eq!(mesh.regions(), &[7]);
    }

    #[test]
    fn region_tags_round_and_refuse_negative_or_non_finite() {
        assert_eq!(region_tag(2.0000001, "f", String::new).unwrap(), 2);
        assert!(region_tag(-1.0, "f", String::new).is_err());
        assert!(region_tag(f64::NAN, "f", String::new).is_err());
        assert!(region_tag(1e12, "f", String::new).is_err());
    }
}

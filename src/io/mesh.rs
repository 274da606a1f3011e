//! Triangle-mesh loading for collision geometry: Wavefront OBJ (`tobj`, polygons
//! triangulated), STL (`stl_io`, ASCII and binary) and Collada `.dae` (our own
//! reader in `collada.rs`). The format is chosen by the file extension,
//! case-insensitively. Every failure is a [`LoadError::Mesh`] naming the file.

use super::collada;
use crate::error::LoadError;
use crate::math::Vec3;
use crate::model::TriangleMesh;
use std::io::BufReader;
use std::path::Path;

/// Loads a triangle mesh from `path` and multiplies every vertex by `scale`
/// (per axis). A scale with an odd number of negative components mirrors the mesh,
/// so the triangles are re-wound to stay counter-clockwise seen from outside.
///
/// Supported extensions: `obj`, `stl`, `dae`. Errors: the file is missing or
/// unreadable, cannot be parsed, holds no triangle, has a face index out of range
/// or a non-finite vertex, or has an unknown extension.
pub fn load_mesh(path: &Path, scale: &Vec3) -> Result<TriangleMesh, LoadError> {
    let name = path.display().to_string();
    let fail = |reason: String| LoadError::Mesh { path: name.clone(), reason };
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    if !matches!(ext.as_str(), "obj" | "stl" | "dae") {
        return Err(fail(format!(
            "unsupported mesh format '{}' (expected .obj, .stl or .dae)",
            if ext.is_empty() { "<no extension>" } else { &ext }
        )));
    }
    if !path.is_file() {
        return Err(fail("file not found".into()));
    }
    let (vertices, triangles) = match ext.as_str() {
        "obj" => load_obj(path).map_err(fail)?,
        "stl" => load_stl(path).map_err(fail)?,
        _ => {
            let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
            collada::parse_collada(&text).map_err(fail)?
        }
    };
    let mut mesh = finish(vertices, triangles).map_err(fail)?;
    for v in &mut mesh.vertices {
        *v = v.component_mul(scale);
    }
    if scale.iter().filter(|&&s| s < 0.0).count() % 2 == 1 {
        for t in &mut mesh.triangles {
            t.swap(1, 2);
        }
    }
    mesh.source = Some(name);
    Ok(mesh)
}

/// Welds the vertices of `mesh` that lie within `rel_tol × size` of an earlier one
/// (`size`: the largest extent of the bounding box of the vertices the triangles use):
/// the triangles refer to the first of them, and the triangles that then repeat a vertex
/// (slivers narrower than the tolerance) are dropped. Returns the numbers of welded
/// vertices and dropped triangles. Unused vertices are kept (the collision checks ignore
/// them). STL files list each triangle's corners on their own, and exporters print the
/// copies with rounding: welded with the collision checks' own tolerance
/// ([`crate::collision::polytope::MESH_TOLERANCE`]), the triangles share their edges again.
pub fn weld_vertices(mesh: &mut TriangleMesh, rel_tol: f64) -> (usize, usize) {
    let n = mesh.vertices.len();
    let mut used = vec![false; n];
    for t in &mesh.triangles {
        for &i in t {
            if let Some(u) = used.get_mut(i as usize) {
                *u = true;
            }
        }
    }
    let (mut lo, mut hi) = (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY));
    for (v, _) in mesh.vertices.iter().zip(&used).filter(|(_, u)| **u) {
        lo = lo.inf(v);
        hi = hi.sup(v);
    }
    let tol = rel_tol * (hi - lo).max();
    if !(tol.is_finite() && tol > 0.0) {
        return (0, 0);
    }
    // Cells of side tol: a vertex within tol of another lies in one of the 27 cells
    // around it.
    let cell = |p: &Vec3| [0, 1, 2].map(|k| (p[k] / tol).floor() as i64);
    let mut grid: crate::collision::mesh_check::IntMap<[i64; 3], Vec<u32>> = Default::default();
    let mut rep: Vec<u32> = (0..n as u32).collect();
    let mut welded = 0;
    for i in 0..n {
        if !used[i] {
            continue;
        }
        let p = mesh.vertices[i];
        let c = cell(&p);
        let mut found = None;
        'search: for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let key = [c[0] + dx, c[1] + dy, c[2] + dz];
                    if let Some(list) = grid.get(&key) {
                        if let Some(&j) = list.iter().find(|&&j| (mesh.vertices[j as usize] - p).norm() <= tol) {
                            found = Some(j);
                            break 'search;
                        }
                    }
                }
            }
        }
        match found {
            Some(j) => {
                rep[i] = j;
                welded += 1;
            }
            None => grid.entry(c).or_default().push(i as u32),
        }
    }
    if welded == 0 {
        return (0, 0);
    }
    let before = mesh.triangles.len();
    mesh.triangles = mesh
        .triangles
        .iter()
        .map(|t| t.map(|i| rep[i as usize]))
        .filter(|t| t[0] != t[1] && t[1] != t[2] && t[0] != t[2])
        .collect();
    (welded, before - mesh.triangles.len())
}

/// Checks a raw mesh: non-empty, finite vertices, indices in range.
pub(crate) fn finish(vertices: Vec<Vec3>, triangles: Vec<[u32; 3]>) -> Result<TriangleMesh, String> {
    if triangles.is_empty() {
        return Err(format!("the mesh is empty ({} vertices, no triangles)", vertices.len()));
    }
    if let Some(i) = vertices.iter().position(|v| !v.iter().all(|x| x.is_finite())) {
        return Err(format!("vertex {i} is not finite"));
    }
    for (k, t) in triangles.iter().enumerate() {
        if let Some(&i) = t.iter().find(|&&i| i as usize >= vertices.len()) {
            return Err(format!("triangle {k} refers to vertex {i}, but there are only {} vertices", vertices.len()));
        }
    }
    Ok(TriangleMesh { vertices, triangles, source: None })
}

type Raw = (Vec<Vec3>, Vec<[u32; 3]>);

fn load_obj(path: &Path) -> Result<Raw, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut reader = BufReader::new(file);
    let opts = tobj::LoadOptions { triangulate: true, single_index: false, ignore_points: true, ignore_lines: true };
    // Materials are irrelevant for collision: never open .mtl files.
    let (models, _) = tobj::load_obj_buf(&mut reader, &opts, |_| Err(tobj::LoadError::OpenFileFailed))
        .map_err(|e| format!("invalid OBJ: {e}"))?;
    let mut vertices = vec![];
    let mut triangles = vec![];
    for m in &models {
        let base = vertices.len();
        let pos = &m.mesh.positions;
        if pos.len() % 3 != 0 {
            return Err(format!("object '{}' has a position array of length {}", m.name, pos.len()));
        }
        vertices.extend(pos.chunks_exact(3).map(|p| Vec3::new(p[0] as f64, p[1] as f64, p[2] as f64)));
        let n = pos.len() / 3;
        for t in m.mesh.indices.chunks(3) {
            if t.len() != 3 {
                return Err(format!("object '{}' has an incomplete triangle", m.name));
            }
            if let Some(&i) = t.iter().find(|&&i| i as usize >= n) {
                return Err(format!("object '{}' face refers to vertex {i}, but it has only {n} vertices", m.name));
            }
            let off = |i: u32| (i as usize + base) as u32;
            triangles.push([off(t[0]), off(t[1]), off(t[2])]);
        }
    }
    Ok((vertices, triangles))
}

fn load_stl(path: &Path) -> Result<Raw, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut reader = BufReader::new(file);
    let mesh = stl_io::read_stl(&mut reader).map_err(|e| format!("invalid STL: {e}"))?;
    let vertices = mesh.vertices.iter().map(|v| Vec3::new(v[0] as f64, v[1] as f64, v[2] as f64)).collect();
    let triangles =
        mesh.faces.iter().map(|f| [f.vertices[0] as u32, f.vertices[1] as u32, f.vertices[2] as u32]).collect();
    Ok((vertices, triangles))
}

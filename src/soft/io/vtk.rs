//! VTK unstructured grids: legacy `.vtk` files (ASCII or binary, read with `vtkio`) and
//! ASCII XML `.vtu` files (read with `roxmltree`) in; ASCII XML `.vtu` files and ParaView
//! `.pvd` collections out.
//!
//! Tetra cells (VTK type 10) make the mesh. Vertex, line, triangle, quad and polygon
//! cells (of any order) are ignored; any other cell type is
//! [`LoadError::Unsupported`](crate::error::LoadError::Unsupported). The region of a tet
//! is read from the first single-component cell array named `region`, `gmsh:physical` or
//! `CellEntityIds` (in that order of preference; legacy `SCALARS` or `FIELD` arrays, XML
//! `CellData` arrays), rounded to the nearest integer; without one every tet is in
//! region 0.
//!
//! Output is XML `.vtu` with ASCII data arrays, written here rather than with `vtkio`:
//! the crate is built without `vtkio`'s XML feature, and ParaView's `.pvd` collections
//! only list XML datasets, so legacy `.vtk` frames could not form a series. Numbers are
//! written in the shortest form that reads back to the same `f64`, so
//! [`write_vtu`] → [`load_vtk`] round-trips the rest mesh exactly. Reading `.vtu` covers
//! what [`write_vtu`] writes and other single-piece files with ASCII data arrays;
//! base64 (`binary`) and `appended` arrays, and compressed files, are refused as
//! unsupported.

use super::{assemble, guarded, line_of, malformed, parse_all, read_bytes, region_tag, unsupported, utf8};
use crate::error::{Error, Result};
use crate::math::Vec3;
use crate::soft::mesh::TetMesh;
use roxmltree::{Document, Node};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use vtkio::model::{Attribute, DataSet, IOBuffer, Piece, VertexNumbers};

/// Names of the cell arrays read as region tags, in order of preference.
const REGION_ARRAYS: [&str; 3] = ["region", "gmsh:physical", "CellEntityIds"];

/// VTK's linear tetrahedron.
const VTK_TETRA: u8 = 10;

/// Loads the tetrahedra of a VTK unstructured grid — legacy `.vtk` (ASCII or binary) or
/// ASCII XML `.vtu`, told apart by content — as a [`TetMesh`]; see the
/// [module documentation](super) for what every loader does and [`parse_vtk`] for this
/// format.
///
/// Errors: [`LoadError::Io`](crate::error::LoadError::Io) when the file cannot be read,
/// and those of [`parse_vtk`].
pub fn load_vtk(path: &Path) -> Result<TetMesh> {
    let bytes = read_bytes(path)?;
    parse_vtk(&bytes, &path.display().to_string())
}

/// Parses a VTK unstructured grid from `bytes`: XML (`.vtu`, ASCII data arrays) when it
/// starts with `<`, legacy `.vtk` otherwise. `name` names the input in errors.
///
/// Errors: [`LoadError::Malformed`](crate::error::LoadError::Malformed) for input the
/// parsers refuse, inconsistent counts, indices out of range, a bad region array, or no
/// tets; [`LoadError::Unsupported`](crate::error::LoadError::Unsupported) for another
/// dataset type, volume cells other than linear tets, several pieces, or binary,
/// appended or compressed XML data; and the [`SoftError`](crate::error::SoftError)s of
/// [`TetMesh::with_regions`].
pub fn parse_vtk(bytes: &[u8], name: &str) -> Result<TetMesh> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    let grid = if bytes[start..].starts_with(b"<") || bytes[start..].starts_with("\u{feff}".as_bytes()) {
        read_xml(utf8(bytes, name)?, name)?
    } else {
        read_legacy(bytes, name)?
    };
    grid.into_mesh(name)
}

/// An unstructured grid as read: points, cells (type and point indices), region values.
struct Grid {
    points: Vec<Vec3>,
    /// `(type, start, end)` into `connectivity`.
    cells: Vec<(u8, usize, usize)>,
    connectivity: Vec<usize>,
    /// One value per cell, when the file has a region array.
    region: Option<Vec<f64>>,
}

impl Grid {
    /// The tets, their regions, and validation.
    fn into_mesh(self, file: &str) -> Result<TetMesh> {
        let n = self.points.len();
        let mut tets = Vec::new();
        let mut regions = Vec::new();
        for (c, &(kind, start, end)) in self.cells.iter().enumerate() {
            if kind != VTK_TETRA {
                if ignored_cell(kind) {
                    continue;
                }
                return Err(unsupported(
                    file,
                    format!("cell {c} of VTK type {kind}"),
                    "only linear tetrahedra (type 10) are read; lower-dimensional cells are ignored",
                ));
            }
            let ids = &self.connectivity[start..end];
            let &[a, b, cc, d] = ids else {
                return Err(malformed(
                    file,
                    format!("cell {c}"),
                    format!("a tetra has 4 points, this one {}", ids.len()),
                ));
            };
            let tet = [a, b, cc, d];
            if let Some(&v) = tet.iter().find(|&&v| v >= n) {
                return Err(malformed(
                    file,
                    format!("cell {c}"),
                    format!("point {v} out of range: the grid has {n} points"),
                ));
            }
            let region = match &self.region {
                Some(values) => region_tag(values[c], file, || format!("region of cell {c}"))?,
                None => 0,
            };
            tets.push(tet);
            regions.push(region);
        }
        assemble(file, self.points, tets, regions)
    }
}

/// Whether a VTK cell type is a point, curve or surface cell (ignored when loading).
fn ignored_cell(kind: u8) -> bool {
    matches!(kind, 1..=9 | 21..=23 | 28 | 30 | 34 | 35 | 36 | 37 | 60..=63 | 68..=70 | 75..=77)
}

// ---------------------------------------------------------------------------------------
// Legacy .vtk (vtkio)

/// Reads a legacy file with `vtkio`, after [`check_legacy_counts`].
fn read_legacy(bytes: &[u8], file: &str) -> Result<Grid> {
    check_legacy_counts(bytes, file)?;
    let vtk = guarded(file, "the legacy VTK parser (vtkio)", || {
        let result = vtkio::parser::parse_be(bytes);
        if !result.is_done() {
            // Parse again through the API that describes the failure.
            let reason =
                vtkio::Vtk::parse_legacy_be(bytes).err().map_or_else(|| "unknown error".into(), |e| e.to_string());
            return Err(match first_non_number(bytes) {
                Some((line, token)) => {
                    malformed(file, format!("line {line}"), format!("'{token}' is not a number (vtkio: {reason})"))
                }
                None => malformed(file, "legacy VTK data", format!("vtkio cannot parse it: {reason}")),
            });
        }
        let (rest, vtk) = result.unwrap();
        // vtkio stops quietly at data it does not recognise (e.g. a cut attribute section).
        if let Some(k) = rest.iter().position(|b| !b.is_ascii_whitespace()) {
            let offset = bytes.len() - rest.len() + k;
            return Err(malformed(
                file,
                format!("line {}", line_of(bytes, offset)),
                "data vtkio does not read as part of the dataset (a truncated or malformed section)",
            ));
        }
        Ok(vtk)
    })??;
    let DataSet::UnstructuredGrid { pieces, .. } = vtk.data else {
        let kind = match vtk.data {
            DataSet::ImageData { .. } => "STRUCTURED_POINTS",
            DataSet::StructuredGrid { .. } => "STRUCTURED_GRID",
            DataSet::RectilinearGrid { .. } => "RECTILINEAR_GRID",
            DataSet::PolyData { .. } => "POLYDATA",
            _ => "FIELD",
        };
        return Err(unsupported(file, format!("DATASET {kind}"), "only UNSTRUCTURED_GRID datasets hold tetrahedra"));
    };
    let [Piece::Inline(piece)] = &pieces[..] else {
        return Err(unsupported(file, "dataset", "expected one inline piece"));
    };
    let coords = piece
        .points
        .clone()
        .cast_into::<f64>()
        .ok_or_else(|| malformed(file, "POINTS", "the coordinates are not numbers"))?;
    if coords.len() % 3 != 0 {
        return Err(malformed(file, "POINTS", "the coordinate count is not a multiple of 3"));
    }
    let points: Vec<Vec3> = coords.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2])).collect();

    let VertexNumbers::Legacy { num_cells, vertices } = &piece.cells.cell_verts else {
        return Err(malformed(file, "CELLS", "expected a legacy cell list"));
    };
    let num_cells = *num_cells as usize;
    let types = &piece.cells.types;
    if types.len() != num_cells {
        return Err(malformed(file, "CELL_TYPES", format!("{} cell types for {num_cells} cells", types.len())));
    }
    let mut cells = Vec::with_capacity(num_cells);
    let mut connectivity = Vec::with_capacity(vertices.len());
    let mut at = 0usize;
    for (c, t) in types.iter().enumerate() {
        let Some(&k) = vertices.get(at) else {
            return Err(malformed(file, "CELLS", format!("the list ends before cell {c} of {num_cells}")));
        };
        let k = k as usize;
        let ids = vertices
            .get(at + 1..at + 1 + k)
            .ok_or_else(|| malformed(file, format!("CELLS (cell {c})"), format!("{k} points run past the list")))?;
        let start = connectivity.len();
        connectivity.extend(ids.iter().map(|&v| v as usize));
        cells.push((*t as u8, start, connectivity.len()));
        at += 1 + k;
    }
    if at != vertices.len() {
        return Err(malformed(
            file,
            "CELLS",
            format!("the list size is {}, its {num_cells} cells use {at}", vertices.len()),
        ));
    }

    let mut region = None;
    'names: for wanted in REGION_ARRAYS {
        for attribute in &piece.data.cell {
            let candidates: Vec<(&str, usize, &IOBuffer)> = match attribute {
                Attribute::DataArray(a) => vec![(a.name.as_str(), a.elem.num_comp() as usize, &a.data)],
                Attribute::Field { data_array, .. } => {
                    data_array.iter().map(|a| (a.name.as_str(), a.elem as usize, &a.data)).collect()
                }
            };
            for (array, comps, data) in candidates {
                if array != wanted {
                    continue;
                }
                let element = || format!("CELL_DATA array '{array}'");
                if comps != 1 {
                    return Err(malformed(
                        file,
                        element(),
                        format!("a region array has 1 component, this one {comps}"),
                    ));
                }
                let values =
                    data.clone().cast_into::<f64>().ok_or_else(|| malformed(file, element(), "not numbers"))?;
                if values.len() != num_cells {
                    return Err(malformed(file, element(), format!("{} values for {num_cells} cells", values.len())));
                }
                region = Some(values);
                break 'names;
            }
        }
    }
    Ok(Grid { points, cells, connectivity, region })
}

/// The first non-numeric token on a data line (a line, after the three header lines,
/// whose first token is a number) of a legacy file: where `vtkio`, which does not say,
/// most likely failed.
fn first_non_number(bytes: &[u8]) -> Option<(usize, String)> {
    let text = String::from_utf8_lossy(bytes);
    text.lines().enumerate().skip(3).find_map(|(i, line)| {
        let mut tokens = line.split_ascii_whitespace();
        tokens.next()?.parse::<f64>().ok()?;
        tokens.find(|t| t.parse::<f64>().is_err()).map(|t| (i + 1, t.to_string()))
    })
}

/// Bounds the counts of a legacy file before `vtkio` reads it: `vtkio` reserves memory
/// for the count a header declares before reading the values, and multiplies counts in
/// 32 bits, so a mutated count could abort the process. Every value takes at least a bit
/// of the file, so no legitimate count exceeds eight times its byte length.
fn check_legacy_counts(bytes: &[u8], file: &str) -> Result<()> {
    let limit = (bytes.len() as u64).saturating_mul(8).saturating_add(64);
    let int = |t: Option<&[u8]>| -> Option<u64> { std::str::from_utf8(t?).ok()?.parse().ok() };
    let ends_with = |t: &[u8], k: &str| t.len() >= k.len() && t[t.len() - k.len()..].eq_ignore_ascii_case(k.as_bytes());
    const TYPES: [&str; 11] = [
        "bit",
        "char",
        "unsigned_char",
        "short",
        "unsigned_short",
        "int",
        "unsigned_int",
        "long",
        "unsigned_long",
        "float",
        "double",
    ];

    let tokens = || bytes.split(|b| b.is_ascii_whitespace()).filter(|t| !t.is_empty());
    let mut it = tokens().enumerate();
    let mut elements = 0u64; // the latest CELL_DATA / POINT_DATA count
    let mut last_scalars = None; // token index of the latest SCALARS
    let (mut prev2, mut prev1): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    while let Some((i, t)) = it.next() {
        let mut ahead = it.clone().map(|(_, t)| t);
        let (n1, n2, n3) = (ahead.next(), ahead.next(), ahead.next());
        let mut needs: Vec<(&str, u64)> = vec![];
        if ends_with(t, "POINTS") {
            needs.push(("POINTS", int(n1).unwrap_or(0).saturating_mul(3)));
        } else if ["CELLS", "VERTICES", "LINES", "POLYGONS", "TRIANGLE_STRIPS"].iter().any(|k| ends_with(t, k)) {
            needs.push(("cell list", int(n1).unwrap_or(0)));
            needs.push(("cell list size", int(n2).unwrap_or(0)));
        } else if ends_with(t, "TEXTURE_COORDINATES") {
            needs.push(("TEXTURE_COORDINATES", int(n2).unwrap_or(0).saturating_mul(elements)));
        } else if ends_with(t, "CELL_TYPES") || ends_with(t, "_COORDINATES") || ends_with(t, "FIELD") {
            let n = if ends_with(t, "FIELD") { int(n2) } else { int(n1) };
            needs.push(("count", n.unwrap_or(0)));
        } else if ends_with(t, "CELL_DATA") || ends_with(t, "POINT_DATA") {
            elements = int(n1).unwrap_or(0);
            needs.push(("attribute count", elements));
        } else if ends_with(t, "COLOR_SCALARS") {
            needs.push(("COLOR_SCALARS", int(n2).unwrap_or(0).saturating_mul(elements)));
        } else if ends_with(t, "SCALARS") {
            last_scalars = Some(i);
            needs.push(("SCALARS", int(n3).unwrap_or(1).saturating_mul(elements)));
        } else if ends_with(t, "LOOKUP_TABLE") {
            // Inside a SCALARS header the table is only named; standalone it has a size.
            if last_scalars.is_none_or(|s| i > s + 4) {
                needs.push(("LOOKUP_TABLE", int(n2).unwrap_or(0).saturating_mul(4)));
            }
        } else if ends_with(t, "VECTORS") || ends_with(t, "NORMALS") {
            needs.push(("vectors", elements.saturating_mul(3)));
        } else if ends_with(t, "TENSORS") {
            needs.push(("TENSORS", elements.saturating_mul(9)));
        } else if TYPES.iter().any(|k| t.eq_ignore_ascii_case(k.as_bytes())) {
            // A FIELD array: `name components tuples type`.
            if let (Some(a), Some(b)) = (int(prev2), int(prev1)) {
                needs.push(("FIELD array", a.saturating_mul(b)));
            }
        }
        if let Some((what, n)) = needs.into_iter().find(|&(_, n)| n > limit) {
            let offset = t.as_ptr() as usize - bytes.as_ptr() as usize;
            return Err(malformed(
                file,
                format!("line {}", line_of(bytes, offset)),
                format!("{what} of {n} values cannot fit in a file of {} bytes", bytes.len()),
            ));
        }
        (prev2, prev1) = (prev1, Some(t));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// XML .vtu (roxmltree), ASCII data arrays

/// Reads a serial XML unstructured grid with ASCII data arrays.
fn read_xml(text: &str, file: &str) -> Result<Grid> {
    let text = text.trim_start_matches('\u{feff}');
    let doc = Document::parse(text).map_err(|e| malformed(file, "XML", e.to_string()))?;
    read_xml_doc(&doc, file)
}

/// The first child element of `n` named `tag`.
fn child<'a, 'input>(n: Node<'a, 'input>, tag: &str) -> Option<Node<'a, 'input>> {
    n.children().find(|c| c.has_tag_name(tag))
}

/// The `DataArray` child of `parent` named `name`.
fn named<'a, 'input>(parent: Option<Node<'a, 'input>>, name: &str) -> Option<Node<'a, 'input>> {
    parent.and_then(|p| p.children().find(|c| c.has_tag_name("DataArray") && c.attribute("Name") == Some(name)))
}

/// The values of an ASCII DataArray `n`, checked to number `len`.
fn ascii_values<'a>(
    n: Node<'a, '_>,
    len: usize,
    what: &str,
    file: &str,
    at: &dyn Fn(Node) -> String,
) -> Result<Vec<&'a str>> {
    let element = || format!("DataArray '{what}' ({})", at(n));
    match n.attribute("format").unwrap_or("ascii") {
        "ascii" => {}
        f => return Err(unsupported(file, element(), format!("format '{f}': only ASCII data arrays are read"))),
    }
    let values: Vec<&str> = n.text().unwrap_or("").split_ascii_whitespace().collect();
    if values.len() != len {
        return Err(malformed(file, element(), format!("{} values, expected {len}", values.len())));
    }
    Ok(values)
}

/// [`read_xml`] of the parsed document.
fn read_xml_doc(doc: &Document, file: &str) -> Result<Grid> {
    let at = |n: Node| format!("line {}", doc.text_pos_at(n.range().start).row);
    let root = doc.root_element();
    if !root.has_tag_name("VTKFile") {
        return Err(malformed(file, format!("<{}>", root.tag_name().name()), "not a VTK XML file (no <VTKFile>)"));
    }
    if root.attribute("type") != Some("UnstructuredGrid") {
        return Err(unsupported(
            file,
            format!("VTKFile type '{}'", root.attribute("type").unwrap_or("")),
            "only UnstructuredGrid (.vtu) files hold tetrahedra",
        ));
    }
    if root.attribute("compressor").is_some_and(|c| !c.is_empty()) {
        return Err(unsupported(file, "VTKFile compressor", "compressed files are not read; save with ASCII data"));
    }
    let grid = child(root, "UnstructuredGrid").ok_or_else(|| malformed(file, "<VTKFile>", "no <UnstructuredGrid>"))?;
    let pieces: Vec<Node> = grid.children().filter(|c| c.has_tag_name("Piece")).collect();
    let [piece] = pieces[..] else {
        return Err(unsupported(
            file,
            "<UnstructuredGrid>",
            format!("{} pieces: only single-piece files are read", pieces.len()),
        ));
    };
    let count = |name: &str| -> Result<usize> {
        let v = piece
            .attribute(name)
            .ok_or_else(|| malformed(file, format!("<Piece> ({})", at(piece)), format!("no {name}")))?;
        v.parse()
            .map_err(|_| malformed(file, format!("<Piece> ({})", at(piece)), format!("{name}='{v}' is not a count")))
    };
    let (num_points, num_cells) = (count("NumberOfPoints")?, count("NumberOfCells")?);

    let points_node = child(piece, "Points")
        .and_then(|p| child(p, "DataArray"))
        .ok_or_else(|| malformed(file, format!("<Piece> ({})", at(piece)), "no <Points> data"))?;
    if points_node.attribute("NumberOfComponents").unwrap_or("1") != "3" {
        return Err(malformed(file, format!("<Points> ({})", at(points_node)), "points need NumberOfComponents=\"3\""));
    }
    let len = num_points.checked_mul(3).ok_or_else(|| malformed(file, "<Piece>", "too many points"))?;
    let coords: Vec<f64> = parse_all(
        &ascii_values(points_node, len, "Points", file, &at)?,
        file,
        || format!("<Points> ({})", at(points_node)),
        "number",
    )?;
    let points = coords.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2])).collect();

    let cells_node = child(piece, "Cells");
    let need = |name: &str| {
        named(cells_node, name)
            .ok_or_else(|| malformed(file, format!("<Piece> ({})", at(piece)), format!("no <Cells> '{name}' array")))
    };
    let (conn_node, off_node, type_node) = (need("connectivity")?, need("offsets")?, need("types")?);
    let offsets: Vec<usize> = parse_all(
        &ascii_values(off_node, num_cells, "offsets", file, &at)?,
        file,
        || format!("offsets ({})", at(off_node)),
        "offset",
    )?;
    let types: Vec<u8> = parse_all(
        &ascii_values(type_node, num_cells, "types", file, &at)?,
        file,
        || format!("types ({})", at(type_node)),
        "cell type",
    )?;
    let conn_len = offsets.last().copied().unwrap_or(0);
    let connectivity: Vec<usize> = parse_all(
        &ascii_values(conn_node, conn_len, "connectivity", file, &at)?,
        file,
        || format!("connectivity ({})", at(conn_node)),
        "point index",
    )?;
    let mut cells = Vec::with_capacity(num_cells);
    let mut start = 0;
    for (c, (&end, &kind)) in offsets.iter().zip(&types).enumerate() {
        if end < start {
            return Err(malformed(
                file,
                format!("offsets ({})", at(off_node)),
                format!("offset of cell {c} decreases"),
            ));
        }
        cells.push((kind, start, end));
        start = end;
    }

    let cell_data = child(piece, "CellData");
    let mut region = None;
    if let Some(n) = REGION_ARRAYS.iter().find_map(|name| named(cell_data, name)) {
        let what = n.attribute("Name").unwrap_or("region");
        if n.attribute("NumberOfComponents").unwrap_or("1") != "1" {
            return Err(malformed(file, format!("DataArray '{what}' ({})", at(n)), "a region array has 1 component"));
        }
        region = Some(parse_all(
            &ascii_values(n, num_cells, what, file, &at)?,
            file,
            || format!("DataArray '{what}' ({})", at(n)),
            "number",
        )?);
    }
    Ok(Grid { points, cells, connectivity, region })
}

// ---------------------------------------------------------------------------------------
// Output

/// `x` in the shortest form that parses back to the same `f64` (plain decimals for
/// moderate magnitudes, exponent form otherwise).
fn number(out: &mut String, x: f64) {
    let a = x.abs();
    if a == 0.0 || (1e-4..1e15).contains(&a) {
        let _ = write!(out, "{x}");
    } else {
        let _ = write!(out, "{x:e}");
    }
}

/// `s` escaped for an XML attribute value.
fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Checks `values` (named `what` in errors) for length and finiteness.
fn check_values(what: &'static str, name: &str, values: &[f64], expected: usize) -> Result<()> {
    if values.len() != expected {
        return Err(Error::InvalidInput(format!("{what} '{name}' has {} values, expected {expected}", values.len())));
    }
    if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::InvalidInput(format!("{what} '{name}'[{i}] is not finite ({v})")));
    }
    Ok(())
}

/// The `.vtu` text of `mesh` at `positions` with the given arrays.
fn vtu_text(
    mesh: &TetMesh,
    positions: &[Vec3],
    cell_data: &[(&str, &[f64])],
    point_data: &[(&str, &[Vec3])],
) -> Result<String> {
    let (nv, nt) = (mesh.num_vertices(), mesh.num_tets());
    if positions.len() != nv {
        return Err(Error::Dimension { what: "positions", expected: nv, got: positions.len() });
    }
    let flat: Vec<f64> = positions.iter().flat_map(|p| p.iter().copied()).collect();
    check_values("positions", "", &flat, 3 * nv)?;
    let mut names = vec!["region"];
    for (name, values) in cell_data {
        check_values("cell data", name, values, nt)?;
        names.push(name);
    }
    for (name, values) in point_data {
        if values.len() != nv {
            return Err(Error::InvalidInput(format!("point data '{name}' has {} values, expected {nv}", values.len())));
        }
        let flat: Vec<f64> = values.iter().flat_map(|p| p.iter().copied()).collect();
        check_values("point data", name, &flat, 3 * nv)?;
        names.push(name);
    }
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() || names[..i].contains(name) {
            return Err(Error::InvalidInput(format!(
                "data array name '{name}' is empty or repeated ('region' is written for every mesh)"
            )));
        }
    }

    let mut s = String::with_capacity(64 * (nv + nt) + 512);
    s.push_str("<?xml version=\"1.0\"?>\n");
    s.push_str("<VTKFile type=\"UnstructuredGrid\" version=\"0.1\" byte_order=\"LittleEndian\">\n");
    s.push_str("  <UnstructuredGrid>\n");
    let _ = writeln!(s, "    <Piece NumberOfPoints=\"{nv}\" NumberOfCells=\"{nt}\">");
    if !point_data.is_empty() {
        s.push_str("      <PointData>\n");
        for (name, values) in point_data {
            let _ = writeln!(
                s,
                "        <DataArray type=\"Float64\" Name=\"{}\" NumberOfComponents=\"3\" format=\"ascii\">",
                xml_escape(name)
            );
            for v in values.iter() {
                s.push_str("         ");
                for c in v.iter() {
                    s.push(' ');
                    number(&mut s, *c);
                }
                s.push('\n');
            }
            s.push_str("        </DataArray>\n");
        }
        s.push_str("      </PointData>\n");
    }
    s.push_str("      <CellData Scalars=\"region\">\n");
    s.push_str("        <DataArray type=\"UInt32\" Name=\"region\" format=\"ascii\">\n");
    for chunk in mesh.regions().chunks(16) {
        s.push_str("         ");
        for r in chunk {
            let _ = write!(s, " {r}");
        }
        s.push('\n');
    }
    s.push_str("        </DataArray>\n");
    for (name, values) in cell_data {
        let _ = writeln!(s, "        <DataArray type=\"Float64\" Name=\"{}\" format=\"ascii\">", xml_escape(name));
        for chunk in values.chunks(8) {
            s.push_str("         ");
            for v in chunk {
                s.push(' ');
                number(&mut s, *v);
            }
            s.push('\n');
        }
        s.push_str("        </DataArray>\n");
    }
    s.push_str("      </CellData>\n");
    s.push_str("      <Points>\n");
    s.push_str("        <DataArray type=\"Float64\" Name=\"Points\" NumberOfComponents=\"3\" format=\"ascii\">\n");
    for p in positions {
        s.push_str("         ");
        for c in p.iter() {
            s.push(' ');
            number(&mut s, *c);
        }
        s.push('\n');
    }
    s.push_str("        </DataArray>\n");
    s.push_str("      </Points>\n");
    s.push_str("      <Cells>\n");
    s.push_str("        <DataArray type=\"Int64\" Name=\"connectivity\" format=\"ascii\">\n");
    for t in mesh.tets() {
        let _ = writeln!(s, "          {} {} {} {}", t[0], t[1], t[2], t[3]);
    }
    s.push_str("        </DataArray>\n");
    s.push_str("        <DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">\n");
    for chunk in (1..=nt).collect::<Vec<_>>().chunks(16) {
        s.push_str("         ");
        for k in chunk {
            let _ = write!(s, " {}", 4 * k);
        }
        s.push('\n');
    }
    s.push_str("        </DataArray>\n");
    s.push_str("        <DataArray type=\"UInt8\" Name=\"types\" format=\"ascii\">\n");
    for chunk in mesh.tets().chunks(32) {
        s.push_str("         ");
        for _ in chunk {
            let _ = write!(s, " {VTK_TETRA}");
        }
        s.push('\n');
    }
    s.push_str("        </DataArray>\n");
    s.push_str("      </Cells>\n");
    s.push_str("    </Piece>\n");
    s.push_str("  </UnstructuredGrid>\n");
    s.push_str("</VTKFile>\n");
    Ok(s)
}

/// Writes `text` to `path` ([`Error::InvalidInput`] naming the path when it cannot).
fn write_text(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::InvalidInput(format!("cannot write '{}': {e}", path.display())))
}

/// Writes `mesh` at the current `positions` (one per vertex) as a VTK XML unstructured
/// grid (`.vtu`, ASCII data arrays, ParaView-readable): points, tets (VTK type 10), a
/// `region` cell array (`UInt32`) with the mesh's region tags, then one `Float64` cell
/// array per `cell_data` entry (one value per tet) and one 3-component `Float64` point
/// array per `point_data` entry (one vector per vertex, e.g. velocities or forces).
/// Numbers are written so that they read back exactly.
///
/// Errors: [`Error::Dimension`] when `positions` is not one per vertex;
/// [`Error::InvalidInput`] for an array of the wrong length, a non-finite value, an
/// empty or repeated array name (`region` is taken), or a file that cannot be written.
pub fn write_vtu(
    path: &Path,
    mesh: &TetMesh,
    positions: &[Vec3],
    cell_data: &[(&str, &[f64])],
    point_data: &[(&str, &[Vec3])],
) -> Result<()> {
    write_text(path, &vtu_text(mesh, positions, cell_data, point_data)?)
}

/// A trajectory written for ParaView: one `.vtu` file per frame, `{stem}_{frame:05}.vtu`
/// (frames numbered from 0), in a directory, and a `{stem}.pvd` collection listing them
/// with their times (written by [`VtkSeries::finish`]; open it in ParaView to play the
/// series).
#[derive(Clone, Debug)]
pub struct VtkSeries {
    dir: PathBuf,
    stem: String,
    /// `(time, file name)` of every frame written.
    frames: Vec<(f64, String)>,
}

impl VtkSeries {
    /// A series of files `{dir}/{stem}_{frame:05}.vtu` and `{dir}/{stem}.pvd`; creates
    /// `dir` (and its parents) when missing.
    ///
    /// Errors ([`Error::InvalidInput`]): an empty `stem`, or one with a path separator,
    /// or a directory that cannot be created.
    pub fn new(dir: impl AsRef<Path>, stem: &str) -> Result<VtkSeries> {
        if stem.is_empty() || stem.contains(['/', '\\']) {
            return Err(Error::InvalidInput(format!(
                "VtkSeries stem '{stem}' must be a non-empty file name without separators"
            )));
        }
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::InvalidInput(format!("cannot create directory '{}': {e}", dir.display())))?;
        Ok(VtkSeries { dir, stem: stem.to_string(), frames: Vec::new() })
    }

    /// Writes the next frame at `time` ([`write_vtu`] of its arguments) and returns its
    /// path.
    ///
    /// Errors: a non-finite `time` ([`Error::InvalidInput`]), and those of [`write_vtu`].
    pub fn push(
        &mut self,
        time: f64,
        mesh: &TetMesh,
        positions: &[Vec3],
        cell_data: &[(&str, &[f64])],
        point_data: &[(&str, &[Vec3])],
    ) -> Result<PathBuf> {
        if !time.is_finite() {
            return Err(Error::InvalidInput(format!("VtkSeries frame time {time} is not finite")));
        }
        let name = format!("{}_{:05}.vtu", self.stem, self.frames.len());
        let path = self.dir.join(&name);
        write_vtu(&path, mesh, positions, cell_data, point_data)?;
        self.frames.push((time, name));
        Ok(path)
    }

    /// The number of frames written so far.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no frame has been written.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Writes the `.pvd` collection listing every frame (file names relative to the
    /// collection, with their times) and returns its path.
    ///
    /// Errors: a file that cannot be written ([`Error::InvalidInput`]).
    pub fn finish(self) -> Result<PathBuf> {
        let mut s = String::from("<?xml version=\"1.0\"?>\n");
        s.push_str("<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n");
        s.push_str("  <Collection>\n");
        for (time, file) in &self.frames {
            s.push_str("    <DataSet timestep=\"");
            number(&mut s, *time);
            let _ = writeln!(s, "\" group=\"\" part=\"0\" file=\"{}\"/>", xml_escape(file));
        }
        s.push_str("  </Collection>\n");
        s.push_str("</VTKFile>\n");
        let path = self.dir.join(format!("{}.pvd", self.stem));
        write_text(&path, &s)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_back_exactly() {
        for x in [0.0, -0.0, 1.0, 0.1, 1.0 / 3.0, 1e-300, -2.5e17, 123456.789, f64::MIN_POSITIVE, f64::MAX] {
            let mut s = String::new();
            number(&mut s, x);
            assert_eq!(s.parse::<f64>().unwrap(), x, "{s}");
        }
    }

    #[test]
    fn huge_legacy_counts_are_refused_before_parsing() {
        let text =
            b"# vtk DataFile Version 2.0\nt\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 1431655765 double\n0 0 0\n";
        let err = check_legacy_counts(text, "f.vtk").unwrap_err().to_string();
        assert!(err.contains("f.vtk") && err.contains("line 5"), "{err}");
        let field = b"CELL_DATA 2\nFIELD FieldData 1\nregion 100000 100000 int\n1 2\n";
        assert!(check_legacy_counts(field, "f.vtk").is_err());
        let ok = b"CELL_DATA 2\nSCALARS region int 1\nLOOKUP_TABLE default\n4000000000 2\n";
        check_legacy_counts(ok, "f.vtk").unwrap();
    }
}

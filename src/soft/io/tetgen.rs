//! TetGen `.node` / `.ele` files (ASCII).
//!
//! * `.node`: a header `<points> <dimension = 3> [<attributes> [<boundary marker 0|1>]]`,
//!   then one line per point `<number> <x> <y> <z> [attributes…] [marker]`.
//! * `.ele`: a header `<tets> <nodes per tet = 4> [<attributes>]`, then one line per tet
//!   `<number> <n1> <n2> <n3> <n4> [attributes…]`. The first attribute (TetGen's region
//!   attribute, `-A`) is the region tag, rounded to the nearest integer; without
//!   attributes every tet is in region 0. Ten-node (second-order, `-o2`) tets are
//!   [`LoadError::Unsupported`](crate::error::LoadError::Unsupported).
//!
//! `#` starts a comment to the end of the line; blank lines are skipped. Points are
//! numbered consecutively from 0 or from 1, as the first point's number says, and the
//! `.ele` node numbers use the same base. Extra values at the end of a line are ignored
//! (as TetGen does); missing ones are errors.

use super::{assemble, malformed, parse_all, read_bytes, region_tag, unsupported, utf8};
use crate::error::Result;
use crate::math::Vec3;
use crate::soft::mesh::TetMesh;
use std::path::Path;

/// Loads a TetGen mesh from its `.node` and `.ele` files; see the
/// [module documentation](super) for what every loader does and [`parse_tetgen`] for
/// this format.
///
/// Errors: [`LoadError::Io`](crate::error::LoadError::Io) when a file cannot be read,
/// and those of [`parse_tetgen`] (naming the files by their paths).
pub fn load_tetgen(node_path: &Path, ele_path: &Path) -> Result<TetMesh> {
    let (node_file, ele_file) = (node_path.display().to_string(), ele_path.display().to_string());
    let node_bytes = read_bytes(node_path)?;
    let ele_bytes = read_bytes(ele_path)?;
    parse(utf8(&node_bytes, &node_file)?, utf8(&ele_bytes, &ele_file)?, &node_file, &ele_file)
}

/// Parses TetGen `.node` text `node` and `.ele` text `ele`; errors name the files
/// `{name}.node` and `{name}.ele`, with the line.
///
/// Errors: [`LoadError::Malformed`](crate::error::LoadError::Malformed) for a bad header,
/// a non-numeric or non-finite value, a missing value, a point numbered out of sequence,
/// a node number out of range, a bad region attribute, or fewer or more lines than the
/// header declares; [`LoadError::Unsupported`](crate::error::LoadError::Unsupported) for
/// a dimension other than 3 or ten-node tets; and the
/// [`SoftError`](crate::error::SoftError)s of [`TetMesh::with_regions`].
pub fn parse_tetgen(node: &str, ele: &str, name: &str) -> Result<TetMesh> {
    parse(node, ele, &format!("{name}.node"), &format!("{name}.ele"))
}

/// The non-blank lines of `text` without comments: `(line number, tokens)`.
fn records(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(i, l)| {
        let l = l.split('#').next().unwrap_or("");
        let tokens: Vec<&str> = l.split_ascii_whitespace().collect();
        (!tokens.is_empty()).then_some((i + 1, tokens))
    })
}

/// Parses the two files, named `node_file` and `ele_file` in errors.
fn parse(node: &str, ele: &str, node_file: &str, ele_file: &str) -> Result<TetMesh> {
    // .node
    let mut node_lines = records(node);
    let (hline, h) = header_of(&mut node_lines, node_file, 2, 4)?;
    let (n, dim) = (h[0], h[1]);
    let attributes = h.get(2).copied().unwrap_or(0);
    let markers = h.get(3).copied().unwrap_or(0);
    if dim != 3 {
        return Err(unsupported(
            node_file,
            format!("header (line {hline})"),
            format!("dimension {dim}: only 3-D meshes"),
        ));
    }
    if n == 0 {
        return Err(unsupported(
            node_file,
            format!("header (line {hline})"),
            "0 points (points kept in a .poly or .smesh file are not read)",
        ));
    }
    if markers > 1 {
        return Err(malformed(
            node_file,
            format!("header (line {hline})"),
            format!("boundary marker flag {markers} is not 0 or 1"),
        ));
    }
    let width = 4usize.saturating_add(attributes).saturating_add(markers);
    let mut base = 0;
    let mut nodes: Vec<Vec3> = Vec::with_capacity(n.min(node.len() / 8 + 1));
    for (line, tokens) in node_lines.by_ref() {
        let element = || format!("line {line}");
        if nodes.len() == n {
            return Err(malformed(node_file, element(), format!("more points than the {n} the header declares")));
        }
        if tokens.len() < width {
            return Err(malformed(node_file, element(), format!("expected {width} values, found {}", tokens.len())));
        }
        let number: i64 = tokens[0]
            .parse()
            .map_err(|_| malformed(node_file, element(), format!("'{}' is not a point number", tokens[0])))?;
        if nodes.is_empty() {
            if number != 0 && number != 1 {
                return Err(malformed(node_file, element(), format!("points are numbered from 0 or 1, not {number}")));
            }
            base = number;
        }
        let expected = base + nodes.len() as i64;
        if number != expected {
            return Err(malformed(node_file, element(), format!("point number {number}, expected {expected}")));
        }
        let c: Vec<f64> = parse_all(&tokens[1..4], node_file, element, "coordinate")?;
        if let Some(x) = c.iter().find(|x| !x.is_finite()) {
            return Err(malformed(node_file, element(), format!("coordinate {x} is not finite")));
        }
        nodes.push(Vec3::new(c[0], c[1], c[2]));
    }
    if nodes.len() < n {
        return Err(malformed(node_file, "points", format!("the file ends after {} of {n} points", nodes.len())));
    }

    // .ele
    let mut ele_lines = records(ele);
    let (hline, h) = header_of(&mut ele_lines, ele_file, 2, 3)?;
    let (m, per_tet) = (h[0], h[1]);
    let attributes = h.get(2).copied().unwrap_or(0);
    match per_tet {
        4 => {}
        10 => {
            return Err(unsupported(
                ele_file,
                format!("header (line {hline})"),
                "ten-node (second-order) tetrahedra: only linear tets are read",
            ))
        }
        k => {
            return Err(malformed(
                ele_file,
                format!("header (line {hline})"),
                format!("{k} nodes per tet (expected 4)"),
            ))
        }
    }
    if m == 0 {
        return Err(malformed(ele_file, format!("header (line {hline})"), "the file has no tetrahedra"));
    }
    let width = 5usize.saturating_add(attributes);
    let mut tets = Vec::with_capacity(m.min(ele.len() / 8 + 1));
    let mut regions = Vec::with_capacity(tets.capacity());
    for (line, tokens) in ele_lines {
        let element = || format!("line {line}");
        if tets.len() == m {
            return Err(malformed(ele_file, element(), format!("more tets than the {m} the header declares")));
        }
        if tokens.len() < width {
            return Err(malformed(ele_file, element(), format!("expected {width} values, found {}", tokens.len())));
        }
        let _: i64 = tokens[0]
            .parse()
            .map_err(|_| malformed(ele_file, element(), format!("'{}' is not a tet number", tokens[0])))?;
        let refs: Vec<i64> = parse_all(&tokens[1..5], ele_file, element, "node number")?;
        let mut tet = [0usize; 4];
        for (slot, &r) in tet.iter_mut().zip(&refs) {
            let k = r.saturating_sub(base);
            if !(0..n as i64).contains(&k) {
                return Err(malformed(
                    ele_file,
                    element(),
                    format!("node {r} out of range: the points are numbered {base}..={}", base + n as i64 - 1),
                ));
            }
            *slot = k as usize;
        }
        let region = if attributes > 0 {
            let v: f64 = tokens[5].parse().map_err(|_| {
                malformed(ele_file, element(), format!("region attribute '{}' is not a number", tokens[5]))
            })?;
            region_tag(v, ele_file, element)?
        } else {
            0
        };
        tets.push(tet);
        regions.push(region);
    }
    if tets.len() < m {
        return Err(malformed(ele_file, "tetrahedra", format!("the file ends after {} of {m} tets", tets.len())));
    }
    assemble(ele_file, nodes, tets, regions)
}

/// The header of a file: `(line, counts)`, at least `min` and at most `max` (further
/// tokens ignored) non-negative integers.
fn header_of<'a>(
    lines: &mut impl Iterator<Item = (usize, Vec<&'a str>)>,
    file: &str,
    min: usize,
    max: usize,
) -> Result<(usize, Vec<usize>)> {
    let (line, tokens) = lines.next().ok_or_else(|| malformed(file, "header", "the file is empty"))?;
    let element = || format!("header (line {line})");
    if tokens.len() < min {
        return Err(malformed(file, element(), format!("expected at least {min} numbers, found {}", tokens.len())));
    }
    let n = tokens.len().min(max);
    Ok((line, parse_all(&tokens[..n], file, element, "count")?))
}

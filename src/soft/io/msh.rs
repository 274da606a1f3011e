//! Gmsh MSH 4.1 files (ASCII and binary), read with the `mshio` crate.
//!
//! Linear tetrahedra (element type 4) make the mesh; the region of a tet is the first
//! physical tag of its volume entity (from `$Entities`), or the entity tag when the entity
//! has no physical group (or the file has no `$Entities` section). Points, lines,
//! triangles and quadrangles (of any order) are ignored; any other volume element
//! (second-order tets, type 11, included) is [`LoadError::Unsupported`]. Other MSH
//! versions (2.2, 4.0) are [`LoadError::Unsupported`] too.
//!
//! `mshio` keeps node tags only when they are sparse; when the tags of the `$Nodes`
//! section are contiguous (`maxTag − minTag + 1 = numNodes`) the loader reads them from
//! the file itself (ASCII or binary), so nodes listed out of tag order still match the
//! elements that name them.
//!
//! Before `mshio` sees the input, the `$MeshFormat` header and the counts of `$Nodes` and
//! `$Elements` are checked (`mshio` 0.4 panics on some bad headers and on empty
//! sections).
//!
//! [`LoadError::Unsupported`]: crate::error::LoadError::Unsupported

use super::{assemble, guarded, line_of, malformed, read_bytes, region_tag, unsupported};
use crate::error::Result;
use crate::math::Vec3;
use crate::soft::mesh::TetMesh;
use mshio::{ElementType, MshParserError};
use std::collections::HashMap;
use std::path::Path;

/// Loads the tetrahedra of a Gmsh MSH 4.1 file (ASCII or binary) as a [`TetMesh`]; see
/// the [module documentation](super) for what every loader does and
/// [`parse_msh`] for this format.
///
/// Errors: [`LoadError::Io`](crate::error::LoadError::Io) when the file cannot be read,
/// and those of [`parse_msh`].
pub fn load_msh(path: &Path) -> Result<TetMesh> {
    let bytes = read_bytes(path)?;
    parse_msh(&bytes, &path.display().to_string())
}

/// Parses Gmsh MSH 4.1 `bytes` (ASCII or binary); `name` names the input in errors.
///
/// Tets are element type 4; region tag = the volume entity's first physical tag, else its
/// entity tag. Nodes used by no tet are dropped (the others renumbered compactly in file
/// order); points, lines, triangles and quadrangles are ignored.
///
/// Errors: [`LoadError::Malformed`](crate::error::LoadError::Malformed) for a file
/// `mshio` cannot parse (naming the line), a duplicate node tag, an element naming a node
/// that is not in `$Nodes`, a negative tag, or no tets;
/// [`LoadError::Unsupported`](crate::error::LoadError::Unsupported) for another MSH
/// version, a data size other than 4 or 8 bytes, or volume elements other than linear
/// tets; and the [`SoftError`](crate::error::SoftError)s of [`TetMesh::with_regions`].
pub fn parse_msh(bytes: &[u8], name: &str) -> Result<TetMesh> {
    let ascii = check_header(bytes, name)?;
    check_counts(bytes, ascii, name)?;
    let parsed = guarded(name, "the MSH parser (mshio)", || {
        mshio::parse_msh_bytes(bytes).map_err(|e| parse_error(bytes, name, &e))
    })??;
    let data = parsed.data;

    // Region of every volume entity that has a physical group.
    let mut physical: HashMap<i32, i32> = HashMap::new();
    if let Some(entities) = &data.entities {
        for v in &entities.volumes {
            if let Some(&p) = v.physical_tags.first() {
                physical.insert(v.tag, p);
            }
        }
    }

    let Some(node_section) = data.nodes else {
        return Err(malformed(name, "$Nodes", "the file has no $Nodes section"));
    };
    let mut nodes = Vec::new();
    let mut index_of: HashMap<u64, usize> = HashMap::new();
    // mshio drops contiguous node tags; read them in file order instead of assuming it.
    let file_tags = if node_section.node_blocks.iter().any(|b| b.node_tags.is_none()) {
        node_tags_in_file_order(bytes, ascii)
    } else {
        None
    };
    let total: usize = node_section.node_blocks.iter().map(|b| b.nodes.len()).sum();
    let file_tags = file_tags.filter(|t| t.len() == total);
    for block in &node_section.node_blocks {
        let first = nodes.len(); // file position of the block's first node
        let mut tags = vec![0u64; block.nodes.len()];
        match &block.node_tags {
            Some(map) => {
                if map.len() != block.nodes.len() {
                    return Err(malformed(
                        name,
                        format!("node block of entity {}", block.entity_tag),
                        "a node tag appears twice in the block",
                    ));
                }
                for (&tag, &i) in map {
                    *tags
                        .get_mut(i)
                        .ok_or_else(|| malformed(name, format!("node {tag}"), "node tag table out of range"))? = tag;
                }
            }
            None => {
                for (i, t) in tags.iter_mut().enumerate() {
                    *t = match &file_tags {
                        Some(file_tags) => file_tags[first + i],
                        None => node_section.min_node_tag.wrapping_add((first + i) as u64),
                    };
                }
            }
        }
        for (node, tag) in block.nodes.iter().zip(tags) {
            if index_of.insert(tag, nodes.len()).is_some() {
                return Err(malformed(name, format!("node {tag}"), "the node tag appears twice"));
            }
            nodes.push(Vec3::new(node.x, node.y, node.z));
        }
    }

    let Some(element_section) = data.elements else {
        return Err(malformed(name, "$Elements", "the file has no $Elements section"));
    };
    let mut tets = Vec::new();
    let mut regions = Vec::new();
    for block in &element_section.element_blocks {
        match block.element_type {
            ElementType::Tet4 => {}
            t if is_volume(t) => {
                let what = if t == ElementType::Tet10 { "second-order tetrahedra" } else { "volume elements" };
                let first = block.elements.first().map_or(String::new(), |e| format!(" (element {})", e.element_tag));
                return Err(unsupported(
                    name,
                    format!("element type {} ({t:?}){first}", t as i32),
                    format!("{what} of this type are not supported: only linear tetrahedra (type 4)"),
                ));
            }
            _ => continue,
        }
        let entity = block.entity_tag;
        let tag = physical.get(&entity).copied().unwrap_or(entity);
        let region = region_tag(f64::from(tag), name, || format!("volume entity {entity}"))?;
        for element in &block.elements {
            let mut tet = [0usize; 4];
            if element.nodes.len() != 4 {
                return Err(malformed(name, format!("element {}", element.element_tag), "a tetrahedron needs 4 nodes"));
            }
            for (slot, node) in tet.iter_mut().zip(&element.nodes) {
                *slot = *index_of.get(node).ok_or_else(|| {
                    malformed(
                        name,
                        format!("element {}", element.element_tag),
                        format!("names node {node}, which is not in $Nodes"),
                    )
                })?;
            }
            tets.push(tet);
            regions.push(region);
        }
    }
    assemble(name, nodes, tets, regions)
}

/// Whether an element type is a volume element (tetrahedra, hexahedra, prisms, pyramids
/// of any order, polyhedra).
fn is_volume(t: ElementType) -> bool {
    let n = format!("{t:?}");
    ["Tet", "Hex", "Pri", "Pyr", "Polyh"].iter().any(|p| n.starts_with(p))
}

/// Checks the `$MeshFormat` header before `mshio` sees it (it panics on some bad
/// headers): version 4.1, file type 0 or 1, data size 4 or 8. Returns whether the file
/// is ASCII.
fn check_header(bytes: &[u8], name: &str) -> Result<bool> {
    let mut lines = bytes.split(|&b| b == b'\n').map(|l| l.trim_ascii()).filter(|l| !l.is_empty());
    if lines.next() != Some(b"$MeshFormat".as_slice()) {
        return Err(malformed(name, "$MeshFormat", "not a Gmsh MSH file: it does not start with $MeshFormat"));
    }
    let header = lines.next().unwrap_or_default();
    let text = String::from_utf8_lossy(header);
    let tokens: Vec<&str> = text.split_ascii_whitespace().collect();
    let element = "$MeshFormat (line 2)";
    let [version, file_type, data_size] = tokens[..] else {
        return Err(malformed(name, element, format!("expected 'version file-type data-size', found '{text}'")));
    };
    if version != "4.1" {
        return Err(unsupported(
            name,
            format!("MSH format version {version}"),
            "only MSH 4.1 is read (save with Gmsh's Mesh.MshFileVersion = 4.1)",
        ));
    }
    let ascii = match file_type {
        "0" => true,
        "1" => false,
        _ => {
            return Err(malformed(
                name,
                element,
                format!("file type '{file_type}' is neither 0 (ASCII) nor 1 (binary)"),
            ))
        }
    };
    match data_size {
        "8" | "4" => Ok(ascii),
        _ => Err(unsupported(name, element, format!("data size '{data_size}': only 4- or 8-byte size_t is read"))),
    }
}

/// Checks that every `$Nodes` and `$Elements` header declares at least one entry
/// (`mshio` computes `count − 1` unchecked).
fn check_counts(bytes: &[u8], ascii: bool, name: &str) -> Result<()> {
    for section in ["$Nodes", "$Elements"] {
        for start in section_starts(bytes, section) {
            let Some(mut r) = NumberReader::new(bytes, start, ascii) else { continue };
            if let (Some(_), Some(0)) = (r.size_t(), r.size_t()) {
                return Err(malformed(
                    name,
                    format!("{section} (line {})", line_of(bytes, start)),
                    "the section declares no entries",
                ));
            }
        }
    }
    Ok(())
}

/// The byte offsets just after every `{tag}` followed by a line break (where `mshio`
/// starts reading a section).
fn section_starts<'a>(bytes: &'a [u8], tag: &'a str) -> impl Iterator<Item = usize> + 'a {
    let tag = tag.as_bytes();
    (0..bytes.len().saturating_sub(tag.len())).filter_map(move |i| {
        let rest = bytes[i..].strip_prefix(tag)?;
        if rest.starts_with(b"\n") {
            Some(i + tag.len() + 1)
        } else if rest.starts_with(b"\r\n") {
            Some(i + tag.len() + 2)
        } else {
            None
        }
    })
}

/// An `mshio` error as a [`LoadError::Malformed`](crate::error::LoadError::Malformed)
/// naming the line (or byte, for binary data) where it happened and what was being read.
fn parse_error(bytes: &[u8], name: &str, e: &MshParserError<&[u8]>) -> crate::Error {
    let backtrace = e.filtered_backtrace();
    let Some((at, _)) = backtrace.first() else {
        return malformed(name, "file", "cannot parse the MSH data");
    };
    let offset = (at.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize).min(bytes.len());
    // Outermost context first, then what went wrong.
    let mut chain: Vec<&str> = backtrace.iter().rev().filter_map(|(_, k)| k.context()).collect();
    chain.dedup();
    let kinds: Vec<String> =
        backtrace.iter().filter(|(_, k)| k.context().is_none()).map(|(_, k)| k.to_string()).collect();
    let reading = if chain.is_empty() { String::new() } else { format!("reading {}: ", chain.join(" > ")) };
    let kind = kinds.first().map_or("unexpected data", String::as_str);
    malformed(name, format!("line {} (byte {offset})", line_of(bytes, offset)), format!("{reading}{kind}"))
}

/// The node tags of the `$Nodes` section in file order, read directly (`mshio` keeps them
/// only when they are sparse). `None` when the section cannot be read this way (`mshio`
/// then reports the problem, or the tags are assumed to follow the file order).
fn node_tags_in_file_order(bytes: &[u8], ascii: bool) -> Option<Vec<u64>> {
    let mut r = NumberReader::new(bytes, section_starts(bytes, "$Nodes").next()?, ascii)?;
    let blocks = r.size_t()?;
    let count = r.size_t()?;
    let (_min, _max) = (r.size_t()?, r.size_t()?);
    let mut tags = Vec::with_capacity((count as usize).min(bytes.len()));
    for _ in 0..blocks {
        let (_dim, _tag, parametric) = (r.int()?, r.int()?, r.int()?);
        let n = r.size_t()?;
        if parametric != 0 || n > count.saturating_sub(tags.len() as u64) {
            return None;
        }
        for _ in 0..n {
            tags.push(r.size_t()?);
        }
        r.skip_doubles(usize::try_from(n).ok()?.checked_mul(3)?)?;
    }
    Some(tags)
}

/// Reads the numbers of an MSH section, ASCII or binary (`(size_t bytes, little-endian)`).
struct NumberReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    binary: Option<(usize, bool)>,
}

impl<'a> NumberReader<'a> {
    /// A reader at `pos`; for a binary file, with the size and byte order of its header
    /// (`$MeshFormat\n4.1 1 <size>\n` then the int 1 in the file's byte order).
    fn new(bytes: &'a [u8], pos: usize, ascii: bool) -> Option<NumberReader<'a>> {
        if ascii {
            return Some(NumberReader { bytes, pos, binary: None });
        }
        let header_end = bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(1)?.0 + 1;
        let one: [u8; 4] = bytes.get(header_end..header_end + 4)?.try_into().ok()?;
        let little = i32::from_le_bytes(one) == 1;
        let text = std::str::from_utf8(&bytes[..header_end]).ok()?;
        let size: usize = text.split_ascii_whitespace().nth(3)?.parse().ok()?;
        Some(NumberReader { bytes, pos, binary: Some((size, little)) })
    }

    /// The next whitespace-separated ASCII token.
    fn token(&mut self) -> Option<&str> {
        while self.bytes.get(self.pos)?.is_ascii_whitespace() {
            self.pos += 1;
        }
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(|b| !b.is_ascii_whitespace()) {
            self.pos += 1;
        }
        std::str::from_utf8(&self.bytes[start..self.pos]).ok()
    }

    /// `n` raw bytes in the file's byte order, as a little-endian `u64`.
    fn raw(&mut self, n: usize, little: bool) -> Option<u64> {
        let b = self.bytes.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        let mut v = 0u64;
        for k in 0..n.min(8) {
            let byte = if little { b[k] } else { b[n - 1 - k] };
            v |= u64::from(byte) << (8 * k);
        }
        Some(v)
    }

    fn size_t(&mut self) -> Option<u64> {
        match self.binary {
            None => self.token()?.parse().ok(),
            Some((size, little)) => self.raw(size, little),
        }
    }

    fn int(&mut self) -> Option<i64> {
        match self.binary {
            None => self.token()?.parse().ok(),
            Some((_, little)) => self.raw(4, little).map(|v| i64::from(v as u32 as i32)),
        }
    }

    fn skip_doubles(&mut self, n: usize) -> Option<()> {
        match self.binary {
            None => (0..n).try_for_each(|_| self.token().map(|_| ())),
            Some(_) => {
                self.pos = self.pos.checked_add(n.checked_mul(8)?)?;
                (self.pos <= self.bytes.len()).then_some(())
            }
        }
    }
}

//! A small Collada (`.dae`) geometry reader on `roxmltree`, for collision meshes.
//!
//! Reads `<library_geometries>/<geometry>/<mesh>`: `<source>` with `<float_array>`
//! and its `<accessor>` (stride, offset), `<vertices>` (the `POSITION` input) and the
//! primitives `<triangles>`, `<polylist>` (polygons triangulated as fans),
//! `<polygons>` (outer boundary only: holes in `<ph>` are ignored), `<trifans>` and
//! `<tristrips>`, honouring the `<input offset>` index stride. Lines and points are
//! skipped (they bound no surface).
//!
//! Placement: when the visual scene (`<scene>/<instance_visual_scene>`, else the
//! first `<visual_scene>`) instantiates geometries through `<instance_geometry>`,
//! each instance is placed by the composed node transforms (`<matrix>`,
//! `<translate>`, `<rotate>`, `<scale>`; `<lookat>`, `<skew>` and `<instance_node>`
//! are not supported and ignored). When no geometry is instantiated, every geometry
//! is taken as is. Finally `<asset><unit meter>` scales to metres and `<up_axis>`
//! (`Y_UP` — the Collada default — or `X_UP`) is rotated to the z-up convention.

use crate::math::Vec3;
use nalgebra::{Matrix3, Matrix4, Unit, Vector3};
use roxmltree::{Document, Node};
use std::collections::HashMap;

type Raw = (Vec<Vec3>, Vec<[u32; 3]>);

fn elements<'a, 'i>(n: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    n.children().filter(|c| c.is_element())
}

fn child<'a, 'i>(n: Node<'a, 'i>, tag: &str) -> Option<Node<'a, 'i>> {
    elements(n).find(|c| c.tag_name().name() == tag)
}

fn line(doc: &Document, n: Node) -> u32 {
    doc.text_pos_at(n.range().start).row
}

fn floats(doc: &Document, n: Node) -> Result<Vec<f64>, String> {
    n.text()
        .unwrap_or("")
        .split_whitespace()
        .map(|t| {
            t.parse::<f64>()
                .map_err(|_| format!("<{}> (line {}): '{t}' is not a number", n.tag_name().name(), line(doc, n)))
        })
        .collect()
}

fn indices(doc: &Document, n: Node) -> Result<Vec<usize>, String> {
    n.text()
        .unwrap_or("")
        .split_whitespace()
        .map(|t| {
            t.parse::<usize>().map_err(|_| {
                format!("<{}> (line {}): '{t}' is not a non-negative integer", n.tag_name().name(), line(doc, n))
            })
        })
        .collect()
}

fn strip_hash(url: &str) -> &str {
    url.strip_prefix('#').unwrap_or(url)
}

/// Parses Collada text into positions (metres, z-up) and triangles.
pub(crate) fn parse_collada(text: &str) -> Result<Raw, String> {
    let doc = Document::parse(text).map_err(|e| format!("invalid XML: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "COLLADA" {
        return Err(format!("the root element is <{}>, expected <COLLADA>", root.tag_name().name()));
    }
    let mut meter = 1.0;
    let mut up = "Y_UP".to_string();
    if let Some(asset) = child(root, "asset") {
        if let Some(u) = child(asset, "unit") {
            if let Some(m) = u.attribute("meter") {
                meter = m
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .ok_or_else(|| format!("<unit meter='{m}'> is not a positive number"))?;
            }
        }
        if let Some(a) = child(asset, "up_axis") {
            up = a.text().unwrap_or("").trim().to_string();
        }
    }
    let up_rot = match up.as_str() {
        "Z_UP" => Matrix3::identity(),
        // y up → z up: (x, y, z) ↦ (x, −z, y)
        "Y_UP" => Matrix3::new(1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0),
        // x up → z up: (x, y, z) ↦ (−z, y, x)
        "X_UP" => Matrix3::new(0.0, 0.0, -1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0),
        other => return Err(format!("unknown <up_axis> '{other}'")),
    };

    let mut geometries: HashMap<&str, Node> = HashMap::new();
    let mut order = vec![];
    for lib in elements(root).filter(|c| c.tag_name().name() == "library_geometries") {
        for g in elements(lib).filter(|c| c.tag_name().name() == "geometry") {
            let id = g.attribute("id").unwrap_or("");
            geometries.insert(id, g);
            order.push(g);
        }
    }
    if order.is_empty() {
        return Err("no <geometry> in <library_geometries>".into());
    }

    let mut instances: Vec<(Node, Matrix4<f64>)> = vec![];
    if let Some(scene) = visual_scene(root) {
        for n in elements(scene).filter(|c| c.tag_name().name() == "node") {
            collect_instances(&doc, n, Matrix4::identity(), &geometries, &mut instances, 0)?;
        }
    }
    if instances.is_empty() {
        instances = order.iter().map(|g| (*g, Matrix4::identity())).collect();
    }

    let mut vertices = vec![];
    let mut triangles = vec![];
    for (g, m) in instances {
        let (verts, tris) = geometry(&doc, g)?;
        let base = vertices.len() as u32;
        let lin = m.fixed_view::<3, 3>(0, 0).into_owned();
        let t = Vector3::new(m[(0, 3)], m[(1, 3)], m[(2, 3)]);
        vertices.extend(verts.iter().map(|v| up_rot * (lin * v + t) * meter));
        let flip = lin.determinant() < 0.0;
        triangles.extend(tris.iter().map(|t| {
            if flip {
                [t[0] + base, t[2] + base, t[1] + base]
            } else {
                [t[0] + base, t[1] + base, t[2] + base]
            }
        }));
    }
    Ok((vertices, triangles))
}

fn visual_scene<'a, 'i>(root: Node<'a, 'i>) -> Option<Node<'a, 'i>> {
    let scenes: Vec<Node> = elements(root)
        .filter(|c| c.tag_name().name() == "library_visual_scenes")
        .flat_map(|l| elements(l).filter(|c| c.tag_name().name() == "visual_scene"))
        .collect();
    let wanted = child(root, "scene").and_then(|s| child(s, "instance_visual_scene")).and_then(|i| i.attribute("url"));
    match wanted {
        Some(url) => scenes.iter().find(|s| s.attribute("id") == Some(strip_hash(url))).copied(),
        None => scenes.first().copied(),
    }
}

fn collect_instances<'a, 'i>(
    doc: &Document,
    node: Node<'a, 'i>,
    parent: Matrix4<f64>,
    geometries: &HashMap<&str, Node<'a, 'i>>,
    out: &mut Vec<(Node<'a, 'i>, Matrix4<f64>)>,
    depth: usize,
) -> Result<(), String> {
    if depth > 256 {
        return Err("<node> hierarchy deeper than 256 levels".into());
    }
    let mut m = parent;
    for c in elements(node) {
        let tag = c.tag_name().name();
        let local = match tag {
            "matrix" | "translate" | "rotate" | "scale" => {
                let v = floats(doc, c)?;
                let want = match tag {
                    "matrix" => 16,
                    "rotate" => 4,
                    _ => 3,
                };
                if v.len() != want {
                    return Err(format!("<{tag}> (line {}) has {} numbers, expected {want}", line(doc, c), v.len()));
                }
                match tag {
                    "matrix" => Matrix4::from_row_slice(&v),
                    "translate" => Matrix4::new_translation(&Vector3::new(v[0], v[1], v[2])),
                    "scale" => Matrix4::new_nonuniform_scaling(&Vector3::new(v[0], v[1], v[2])),
                    _ => {
                        let axis = Vector3::new(v[0], v[1], v[2]);
                        if axis.norm() < 1e-12 {
                            return Err(format!("<rotate> (line {}) has a zero axis", line(doc, c)));
                        }
                        nalgebra::Rotation3::from_axis_angle(&Unit::new_normalize(axis), v[3].to_radians())
                            .to_homogeneous()
                    }
                }
            }
            _ => continue,
        };
        m *= local;
    }
    for c in elements(node) {
        match c.tag_name().name() {
            "instance_geometry" => {
                let url = c.attribute("url").unwrap_or("");
                let g = geometries.get(strip_hash(url)).ok_or_else(|| {
                    format!("<instance_geometry> (line {}) refers to unknown geometry '{url}'", line(doc, c))
                })?;
                out.push((*g, m));
            }
            "node" => collect_instances(doc, c, m, geometries, out, depth + 1)?,
            _ => {}
        }
    }
    Ok(())
}

/// A source's points: the first three components of each accessor element.
fn source_points(doc: &Document, src: Node) -> Result<Vec<Vec3>, String> {
    let id = src.attribute("id").unwrap_or("");
    let fa = child(src, "float_array").ok_or_else(|| format!("source '{id}' has no <float_array>"))?;
    let data = floats(doc, fa)?;
    let acc = child(src, "technique_common").and_then(|t| child(t, "accessor"));
    let attr = |name: &str, default: usize| -> Result<usize, String> {
        match acc.and_then(|a| a.attribute(name)) {
            Some(s) => s.trim().parse().map_err(|_| format!("accessor of source '{id}': bad {name} '{s}'")),
            None => Ok(default),
        }
    };
    let stride = attr("stride", 3)?;
    let offset = attr("offset", 0)?;
    if stride < 3 {
        return Err(format!("source '{id}' has stride {stride}; positions need 3 components"));
    }
    let available = data.len().saturating_sub(offset) / stride;
    let count = attr("count", available)?;
    if count > available {
        return Err(format!("source '{id}' declares {count} points but its array holds {available}"));
    }
    Ok((0..count)
        .map(|k| {
            let i = offset + k * stride;
            Vec3::new(data[i], data[i + 1], data[i + 2])
        })
        .collect())
}

fn geometry(doc: &Document, g: Node) -> Result<Raw, String> {
    let gid = g.attribute("id").unwrap_or("?");
    let Some(mesh) = child(g, "mesh") else {
        return Err(format!("geometry '{gid}' has no <mesh> (only mesh geometry is supported)"));
    };
    let sources: HashMap<&str, Node> = elements(mesh)
        .filter(|c| c.tag_name().name() == "source")
        .map(|s| (s.attribute("id").unwrap_or(""), s))
        .collect();
    let verts = child(mesh, "vertices").ok_or_else(|| format!("geometry '{gid}' has no <vertices>"))?;
    let vid = verts.attribute("id").unwrap_or("");
    let pos_src = elements(verts)
        .find(|i| i.tag_name().name() == "input" && i.attribute("semantic") == Some("POSITION"))
        .and_then(|i| i.attribute("source"))
        .ok_or_else(|| format!("<vertices> of geometry '{gid}' has no POSITION input"))?;
    let src = sources
        .get(strip_hash(pos_src))
        .ok_or_else(|| format!("geometry '{gid}': unknown position source '{pos_src}'"))?;
    let points = source_points(doc, *src)?;

    let mut tris: Vec<[u32; 3]> = vec![];
    for prim in elements(mesh) {
        let tag = prim.tag_name().name();
        if !matches!(tag, "triangles" | "polylist" | "polygons" | "trifans" | "tristrips") {
            continue;
        }
        let what = format!("<{tag}> (line {}) of geometry '{gid}'", line(doc, prim));
        let mut stride = 1;
        let mut pos_off = None;
        for i in elements(prim).filter(|c| c.tag_name().name() == "input") {
            let off: usize = match i.attribute("offset") {
                Some(s) => s.trim().parse().map_err(|_| format!("{what}: bad input offset '{s}'"))?,
                None => 0,
            };
            stride = stride.max(off + 1);
            let sem = i.attribute("semantic").unwrap_or("");
            let source = strip_hash(i.attribute("source").unwrap_or(""));
            if (sem == "VERTEX" && source == vid) || (sem == "POSITION" && sources.contains_key(source)) {
                pos_off = Some(off);
            }
        }
        let pos_off = pos_off.ok_or_else(|| format!("{what} has no VERTEX input"))?;
        // Corner lists: one per polygon (or one for all triangles).
        let vertex_list = |p: Node| -> Result<Vec<u32>, String> {
            let idx = indices(doc, p)?;
            if idx.len() % stride != 0 {
                return Err(format!("{what}: <p> holds {} indices, not a multiple of the stride {stride}", idx.len()));
            }
            idx.chunks(stride)
                .map(|c| {
                    let v = c[pos_off];
                    if v >= points.len() {
                        Err(format!("{what}: vertex index {v} out of range ({} positions)", points.len()))
                    } else {
                        Ok(v as u32)
                    }
                })
                .collect()
        };
        let fan = |out: &mut Vec<[u32; 3]>, poly: &[u32]| {
            for k in 1..poly.len().saturating_sub(1) {
                out.push([poly[0], poly[k], poly[k + 1]]);
            }
        };
        match tag {
            "triangles" => {
                if let Some(p) = child(prim, "p") {
                    let v = vertex_list(p)?;
                    if v.len() % 3 != 0 {
                        return Err(format!("{what}: {} corners, not a multiple of 3", v.len()));
                    }
                    tris.extend(v.chunks(3).map(|c| [c[0], c[1], c[2]]));
                }
            }
            "polylist" => {
                let counts = match child(prim, "vcount") {
                    Some(vc) => indices(doc, vc)?,
                    None => vec![],
                };
                let v = match child(prim, "p") {
                    Some(p) => vertex_list(p)?,
                    None => vec![],
                };
                let total: usize = counts.iter().sum();
                if total != v.len() {
                    return Err(format!("{what}: <vcount> sums to {total} but <p> holds {} corners", v.len()));
                }
                let mut at = 0;
                for n in counts {
                    fan(&mut tris, &v[at..at + n]);
                    at += n;
                }
            }
            "polygons" | "trifans" => {
                let ps = elements(prim).filter_map(|c| match c.tag_name().name() {
                    "p" => Some(c),
                    "ph" => child(c, "p"),
                    _ => None,
                });
                for p in ps {
                    fan(&mut tris, &vertex_list(p)?);
                }
            }
            _ => {
                for p in elements(prim).filter(|c| c.tag_name().name() == "p") {
                    let v = vertex_list(p)?;
                    for k in 0..v.len().saturating_sub(2) {
                        tris.push(if k % 2 == 0 { [v[k], v[k + 1], v[k + 2]] } else { [v[k + 1], v[k], v[k + 2]] });
                    }
                }
            }
        }
    }
    Ok((points, tris))
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    /// A one-geometry document: `prims` are the primitive elements, `scene` the
    /// visual-scene nodes, `asset` the asset contents.
    fn doc(asset: &str, prims: &str, scene: &str) -> String {
        format!(
            r##"<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset>{asset}</asset>
  <library_geometries>
    <geometry id="quad"><mesh>
      <source id="pos">
        <float_array id="pos-a" count="12">0 0 0 1 0 0 1 1 0 0 1 0</float_array>
        <technique_common><accessor source="#pos-a" count="4" stride="3"/></technique_common>
      </source>
      <source id="nrm">
        <float_array id="nrm-a" count="3">0 0 1</float_array>
        <technique_common><accessor source="#nrm-a" count="1" stride="3"/></technique_common>
      </source>
      <vertices id="vtx"><input semantic="POSITION" source="#pos"/></vertices>
      {prims}
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes><visual_scene id="s">{scene}</visual_scene></library_visual_scenes>
</COLLADA>"##
        )
    }

    const TRIS: &str = r##"<triangles count="2">
        <input semantic="VERTEX" source="#vtx" offset="0"/>
        <input semantic="NORMAL" source="#nrm" offset="1"/>
        <p>0 0 1 0 2 0  0 0 2 0 3 0</p></triangles>"##;

    #[test]
    fn triangles_with_interleaved_inputs_and_no_scene() {
        let (v, t) = parse_collada(&doc("<up_axis>Z_UP</up_axis>", TRIS, "")).unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(t, vec![[0, 1, 2], [0, 2, 3]]);
        assert_relative_eq!(v[2], Vec3::new(1.0, 1.0, 0.0));
    }

    #[test]
    fn polygons_polylist_trifans_tristrips_triangulate() {
        let prims = r##"
          <polylist count="1"><input semantic="VERTEX" source="#vtx" offset="0"/><vcount>4</vcount><p>0 1 2 3</p></polylist>
          <polygons count="1"><input semantic="VERTEX" source="#vtx" offset="0"/><p>0 1 2 3</p></polygons>
          <trifans count="1"><input semantic="VERTEX" source="#vtx" offset="0"/><p>0 1 2 3</p></trifans>
          <tristrips count="1"><input semantic="VERTEX" source="#vtx" offset="0"/><p>0 1 3 2</p></tristrips>
          <lines count="1"><input semantic="VERTEX" source="#vtx" offset="0"/><p>0 1</p></lines>"##;
        let (_, t) = parse_collada(&doc("<up_axis>Z_UP</up_axis>", prims, "")).unwrap();
        assert_eq!(t.len(), 8);
        assert_eq!(&t[..2], &[[0, 1, 2], [0, 2, 3]]);
        // the strip keeps a consistent winding
        assert_eq!(&t[6..], &[[0, 1, 3], [3, 1, 2]]);
    }

    #[test]
    fn node_transforms_units_and_up_axis() {
        // scale 2, then 90° about z, then translate (row-major matrix); instanced twice.
        let scene = r##"
          <node id="a"><matrix>1 0 0 5  0 1 0 0  0 0 1 0  0 0 0 1</matrix>
            <rotate>0 0 1 90</rotate><scale>2 2 2</scale>
            <instance_geometry url="#quad"/></node>
          <node id="b"><translate>0 0 1</translate>
            <node id="c"><scale>-1 1 1</scale><instance_geometry url="#quad"/></node></node>"##;
        let (v, t) = parse_collada(&doc("<unit meter=\"0.5\"/><up_axis>Z_UP</up_axis>", TRIS, scene)).unwrap();
        assert_eq!((v.len(), t.len()), (8, 4));
        // vertex (1, 0, 0): scaled (2, 0, 0), rotated (0, 2, 0), translated (5, 2, 0), halved
        assert_relative_eq!(v[1], Vec3::new(2.5, 1.0, 0.0), epsilon = 1e-12);
        // second instance: mirrored in x, raised by 1, halved; triangles re-wound
        assert_relative_eq!(v[4 + 1], Vec3::new(-0.5, 0.0, 0.5), epsilon = 1e-12);
        assert_eq!(t[2], [4, 6, 5]);
    }

    #[test]
    fn y_up_is_rotated_to_z_up() {
        // Y_UP is the Collada default.
        let (v, _) = parse_collada(&doc("", TRIS, "")).unwrap();
        // (0, 1, 0) in y-up is "up": (0, 0, 1) in z-up
        assert_relative_eq!(v[3], Vec3::new(0.0, 0.0, 1.0), epsilon = 1e-12);
        let (v, _) = parse_collada(&doc("<up_axis>X_UP</up_axis>", TRIS, "")).unwrap();
        assert_relative_eq!(v[1], Vec3::new(0.0, 0.0, 1.0), epsilon = 1e-12);
    }

    #[test]
    fn errors_are_descriptive() {
        let bad_p = TRIS.replace("0 0 2 0 3 0</p>", "0 0 2 0 3</p>");
        let e = parse_collada(&doc("", &bad_p, "")).unwrap_err();
        assert!(e.contains("not a multiple of the stride 2"), "{e}");
        let e = parse_collada(&doc("", TRIS, r##"<node><instance_geometry url="#nope"/></node>"##)).unwrap_err();
        assert!(e.contains("unknown geometry '#nope'"), "{e}");
        let e = parse_collada(&doc("<up_axis>W_UP</up_axis>", TRIS, "")).unwrap_err();
        assert!(e.contains("W_UP"), "{e}");
        let e = parse_collada("<mesh/>").unwrap_err();
        assert!(e.contains("expected <COLLADA>"), "{e}");
        let e = parse_collada(&doc("", &TRIS.replace("0 0 1 0 2 0", "0 0 1 0 x 0"), "")).unwrap_err();
        assert!(e.contains("'x' is not a non-negative integer"), "{e}");
    }
}

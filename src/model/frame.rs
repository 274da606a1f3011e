//! Frames, and the merging of fixed joints.
//!
//! Every link of a model's description is a [`Frame`]: a name, the body it is rigidly
//! attached to and its pose in that body's frame. A link that became a body is the frame
//! of that body (identity pose). With [`crate::ModelBuilder::merge_fixed_links`], a link
//! welded to its parent link by a fixed joint is merged into the body of its nearest
//! ancestor that is not welded that way ([`merge_fixed_links`]): its inertia is added to
//! that body's (the composite inertia, Featherstone 2008 eq. 2.63 and §2.13: spatial
//! inertias of rigidly connected bodies add once expressed in one frame), its collision
//! and visual shapes move onto the body with their poses carried over, the joints below
//! it start from the body with their placements composed, and the link stays as a frame
//! by name. The dynamics then run over fewer bodies, with the same results.

use super::description::{Frame, JointSpec, ModelBuilder, WORLD};
use super::{Body, JointType};
use crate::error::ModelError;
use crate::math::{Inertia, SE3};
use std::collections::HashMap;

/// A link merged into another: its name, its group's root link and its pose in the
/// root's frame.
#[derive(Clone, Debug)]
pub(crate) struct MergedLink {
    pub(crate) name: String,
    pub(crate) root: String,
    pub(crate) placement: SE3,
    pub(crate) inertia: Inertia,
}

/// The description of `b` with every link welded to a parent link (a fixed joint whose
/// parent is not the world) merged into its root link, and the merged links in link
/// order. `None` when nothing is merged or when the description is not a well-formed
/// tree (unknown links, several parent joints, a cycle of fixed joints): the ordinary
/// build then reports what is wrong. Each merged link's own inertia is checked first, so
/// that an invalid link is named as in an unmerged build.
pub(crate) fn merge_fixed_links(b: &ModelBuilder) -> Result<Option<(ModelBuilder, Vec<MergedLink>)>, ModelError> {
    let index: HashMap<&str, usize> =
        b.links.iter().enumerate().filter(|(_, l)| l.name != WORLD).map(|(i, l)| (l.name.as_str(), i)).collect();
    if index.len() != b.links.iter().filter(|l| l.name != WORLD).count() {
        return Ok(None);
    }
    // The joint above each link, when it is a weld to another link.
    let mut weld: Vec<Option<usize>> = vec![None; b.links.len()];
    let mut has_parent = vec![false; b.links.len()];
    for (j, spec) in b.joints.iter().enumerate() {
        let Some(&child) = index.get(spec.child.as_str()) else { return Ok(None) };
        if has_parent[child] || (spec.parent != WORLD && !index.contains_key(spec.parent.as_str())) {
            return Ok(None);
        }
        has_parent[child] = true;
        if matches!(spec.joint.kind, JointType::Fixed) && spec.parent != WORLD {
            weld[child] = Some(j);
        }
    }
    if weld.iter().all(Option::is_none) {
        return Ok(None);
    }
    // Each link's root (the nearest ancestor not welded to a link) and its pose there.
    let mut root: Vec<Option<(usize, SE3)>> = vec![None; b.links.len()];
    for start in 0..b.links.len() {
        let mut path = vec![];
        let mut cur = start;
        while root[cur].is_none() {
            match weld[cur] {
                Some(j) => {
                    if path.len() > b.links.len() {
                        return Ok(None); // a cycle of welds
                    }
                    path.push((cur, j));
                    cur = index[b.joints[j].parent.as_str()];
                }
                None => root[cur] = Some((cur, SE3::identity())),
            }
        }
        for &(link, j) in path.iter().rev() {
            let parent = index[b.joints[j].parent.as_str()];
            let (r, x) = root[parent].expect("set above");
            root[link] = Some((r, x * b.joints[j].joint.placement));
        }
    }
    let mut out = b.clone();
    out.merge_fixed_links = false;
    let mut merged = vec![];
    for (i, link) in b.links.iter().enumerate() {
        let Some((r, x)) = root[i] else { continue };
        if r == i || link.name == WORLD {
            continue;
        }
        super::validate::check_inertia(&link.name, &link.inertia)?;
        let target = &mut out.links[r];
        target.inertia += link.inertia.transformed(&x);
        target.collisions.extend(link.collisions.iter().map(|s| {
            let mut s = s.clone();
            s.origin = x * s.origin;
            s
        }));
        target.visuals.extend(link.visuals.iter().map(|s| {
            let mut s = s.clone();
            s.origin = x * s.origin;
            s
        }));
        merged.push(MergedLink {
            name: link.name.clone(),
            root: b.links[r].name.clone(),
            placement: x,
            inertia: link.inertia,
        });
    }
    let root_name = |name: &str| -> String {
        match index.get(name).and_then(|&l| root[l]) {
            Some((r, _)) => b.links[r].name.clone(),
            None => name.to_string(),
        }
    };
    out.joints = b
        .joints
        .iter()
        .enumerate()
        .filter(|(j, spec)| index.get(spec.child.as_str()).is_none_or(|&c| weld[c] != Some(*j)))
        .map(|(_, spec)| {
            let mut spec: JointSpec = spec.clone();
            if let Some(&p) = index.get(spec.parent.as_str()) {
                let (r, x) = root[p].expect("every link has a root");
                if r != p {
                    spec.joint.placement = x * spec.joint.placement;
                    spec.parent = b.links[r].name.clone();
                }
            }
            spec
        })
        .collect();
    let merged_names: std::collections::HashSet<&str> = merged.iter().map(|m| m.name.as_str()).collect();
    out.links.retain(|l| !merged_names.contains(l.name.as_str()));
    for pair in &mut out.collision.excluded_pairs {
        *pair = (root_name(&pair.0), root_name(&pair.1));
    }
    Ok(Some((out, merged)))
}

/// The frames of a built model: one per body (its own link, with `own` its inertia
/// before merging), then the merged links.
pub(crate) fn model_frames(
    bodies: &[Body],
    own: &HashMap<String, Inertia>,
    merged: &[MergedLink],
) -> Result<Vec<Frame>, ModelError> {
    let body_index: HashMap<&str, usize> = bodies.iter().enumerate().map(|(i, b)| (b.name.as_str(), i)).collect();
    let mut frames: Vec<Frame> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| Frame {
            name: b.name.clone(),
            body: i,
            placement: SE3::identity(),
            inertia: own.get(&b.name).copied().unwrap_or(b.inertia),
        })
        .collect();
    for m in merged {
        let body = *body_index.get(m.root.as_str()).ok_or_else(|| {
            ModelError::Invalid(format!("merged link '{}': its body '{}' is missing", m.name, m.root))
        })?;
        frames.push(Frame { name: m.name.clone(), body, placement: m.placement, inertia: m.inertia });
    }
    Ok(frames)
}

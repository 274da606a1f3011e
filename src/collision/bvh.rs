//! Bounding-volume hierarchy over axis-aligned boxes (the triangles of a static mesh):
//! a binary tree built once, top-down, by splitting each node's items at the median of
//! their box centres along the longest axis of the centres' bounds (so the tree is
//! balanced: depth ≤ ⌈log₂(n / LEAF_SIZE)⌉ + 1), with at most [`LEAF_SIZE`] items per leaf.
//!
//! [`Bvh::query`] walks the tree with a fixed-size stack and allocates nothing: it only
//! pushes the overlapping items into the caller's vector.

use crate::math::Vec3;

/// An axis-aligned bounding box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner.
    pub min: Vec3,
    /// Upper corner.
    pub max: Vec3,
}

impl Aabb {
    /// The empty box (contains nothing; the neutral element of [`Aabb::merge`]).
    pub fn empty() -> Aabb {
        Aabb { min: Vec3::repeat(f64::INFINITY), max: Vec3::repeat(f64::NEG_INFINITY) }
    }
    /// The smallest box containing the points.
    pub fn from_points<'a>(points: impl IntoIterator<Item = &'a Vec3>) -> Aabb {
        let mut b = Aabb::empty();
        for p in points {
            b.min = b.min.inf(p);
            b.max = b.max.sup(p);
        }
        b
    }
    /// The smallest box containing both.
    pub fn merge(&self, o: &Aabb) -> Aabb {
        Aabb { min: self.min.inf(&o.min), max: self.max.sup(&o.max) }
    }
    /// The box grown by `r` on every side.
    pub fn inflated(&self, r: f64) -> Aabb {
        Aabb { min: self.min.add_scalar(-r), max: self.max.add_scalar(r) }
    }
    /// Whether the boxes overlap (touching counts).
    pub fn overlaps(&self, o: &Aabb) -> bool {
        (0..3).all(|k| self.min[k] <= o.max[k] && o.min[k] <= self.max[k])
    }
}

/// Largest number of items in a leaf.
pub const LEAF_SIZE: usize = 4;

/// Traversal stack depth: enough for any balanced tree over fewer than 2^32 items.
const STACK: usize = 64;

/// A node: its box and either two children or a range of items.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BvhNode {
    /// Box containing every item below the node.
    pub aabb: Aabb,
    /// Leaf: index of its first item in [`Bvh::items`]; inner node: index of its first
    /// child (the second is `start + 1`).
    pub start: u32,
    /// Number of items of a leaf; 0 for an inner node.
    pub count: u32,
}

/// A bounding-volume hierarchy over item boxes (node 0 is the root).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bvh {
    /// Nodes; empty when there are no items.
    pub nodes: Vec<BvhNode>,
    /// Item indices, grouped by leaf.
    pub items: Vec<u32>,
}

impl Bvh {
    /// Builds the hierarchy over `boxes` (item `i` has box `boxes[i]`).
    pub fn build(boxes: &[Aabb]) -> Bvh {
        let mut bvh = Bvh { nodes: Vec::with_capacity(2 * boxes.len() / LEAF_SIZE + 1), items: vec![] };
        if boxes.is_empty() {
            return bvh;
        }
        let centres: Vec<_> = boxes.iter().map(|b| (b.min + b.max) * 0.5).collect();
        bvh.items = (0..boxes.len() as u32).collect();
        bvh.nodes.push(BvhNode { aabb: Aabb::empty(), start: 0, count: 0 });
        // explicit work list of (node, item range) to avoid recursion
        let mut work = vec![(0usize, 0usize, boxes.len())];
        while let Some((node, lo, hi)) = work.pop() {
            let items = &mut bvh.items[lo..hi];
            let aabb = items.iter().fold(Aabb::empty(), |b, &i| b.merge(&boxes[i as usize]));
            if hi - lo <= LEAF_SIZE {
                bvh.nodes[node] = BvhNode { aabb, start: lo as u32, count: (hi - lo) as u32 };
                continue;
            }
            let mut cmin = centres[items[0] as usize];
            let mut cmax = cmin;
            for &i in items.iter() {
                cmin = cmin.inf(&centres[i as usize]);
                cmax = cmax.sup(&centres[i as usize]);
            }
            let axis = (cmax - cmin).imax();
            let mid = (hi - lo) / 2;
            items.select_nth_unstable_by(mid, |&a, &b| {
                centres[a as usize][axis].total_cmp(&centres[b as usize][axis]).then(a.cmp(&b))
            });
            let first = bvh.nodes.len();
            bvh.nodes.push(BvhNode { aabb: Aabb::empty(), start: 0, count: 0 });
            bvh.nodes.push(BvhNode { aabb: Aabb::empty(), start: 0, count: 0 });
            bvh.nodes[node] = BvhNode { aabb, start: first as u32, count: 0 };
            work.push((first, lo, lo + mid));
            work.push((first + 1, lo + mid, hi));
        }
        bvh
    }

    /// Depth of the tree (1 for a single leaf, 0 when empty).
    pub fn depth(&self) -> usize {
        fn walk(b: &Bvh, n: usize) -> usize {
            let node = &b.nodes[n];
            if node.count > 0 {
                1
            } else {
                1 + walk(b, node.start as usize).max(walk(b, node.start as usize + 1))
            }
        }
        if self.nodes.is_empty() {
            0
        } else {
            walk(self, 0)
        }
    }

    /// Appends to `out` the items whose boxes overlap `query` (touching counts), in no
    /// particular order. `boxes` must be the boxes the tree was built from.
    pub fn query(&self, boxes: &[Aabb], query: &Aabb, out: &mut Vec<u32>) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = [0u32; STACK];
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let node = &self.nodes[stack[top] as usize];
            if !node.aabb.overlaps(query) {
                continue;
            }
            if node.count > 0 {
                let (s, c) = (node.start as usize, node.count as usize);
                for &i in &self.items[s..s + c] {
                    if boxes[i as usize].overlaps(query) {
                        out.push(i);
                    }
                }
            } else if top + 2 <= STACK {
                stack[top] = node.start;
                stack[top + 1] = node.start + 1;
                top += 2;
            } else {
                // unreachable for trees built by `build` (depth ≤ 33); stay correct anyway
                self.query_subtree(boxes, node.start as usize, query, out);
                self.query_subtree(boxes, node.start as usize + 1, query, out);
            }
        }
    }

    fn query_subtree(&self, boxes: &[Aabb], n: usize, query: &Aabb, out: &mut Vec<u32>) {
        let node = &self.nodes[n];
        if !node.aabb.overlaps(query) {
            return;
        }
        if node.count > 0 {
            let (s, c) = (node.start as usize, node.count as usize);
            out.extend(self.items[s..s + c].iter().copied().filter(|&i| boxes[i as usize].overlaps(query)));
        } else {
            self.query_subtree(boxes, node.start as usize, query, out);
            self.query_subtree(boxes, node.start as usize + 1, query, out);
        }
    }
}

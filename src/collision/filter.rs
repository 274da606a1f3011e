//! Pair filtering: which shape pairs the broad phase passes to the narrow phase.
//!
//! Two shapes may collide when all of these hold (rules checked in this order):
//!
//! 1. group/mask bits: `(group_a & mask_b) != 0 && (group_b & mask_a) != 0`;
//! 2. they are on different rigid groups (bodies welded together by fixed joints form
//!    one group; static shapes — on the world or welded to it — share the group
//!    `None`, so static geometry never collides with itself);
//! 3. if both are on bodies of the same articulation (the subtree of one child of the
//!    world): self-collision is on for that articulation, and, when
//!    `skip_parent_child` is set, neither rigid group is the other's parent group
//!    (a moving group hanging from a static link of its articulation counts as that
//!    link's child; the world's own shapes are nobody's parent);
//! 4. the two bodies are not an excluded pair.

use super::shape::CollisionModel;

impl CollisionModel {
    /// Whether shapes `a` and `b` (indices into [`CollisionModel::shapes`]) may
    /// collide; `false` for `a == b` and for indices out of range.
    pub fn allows(&self, a: usize, b: usize) -> bool {
        let (Some(sa), Some(sb)) = (self.shapes.get(a), self.shapes.get(b)) else { return false };
        if a == b || (sa.group & sb.mask) == 0 || (sb.group & sa.mask) == 0 {
            return false;
        }
        let f = &self.filter;
        let group = |body: Option<usize>| body.and_then(|x| f.rigid_group[x]);
        let (ga, gb) = (group(sa.body), group(sb.body));
        if ga == gb {
            return false;
        }
        let (Some(ba), Some(bb)) = (sa.body, sb.body) else { return true };
        if f.articulation[ba] == f.articulation[bb] {
            if !f.self_collision[ba] {
                return false;
            }
            // `parent_group[g]` for a moving group g: the group it hangs from.
            let child_of = |g: Option<usize>, p: Option<usize>| g.is_some_and(|g| f.parent_group[g] == p);
            if f.skip_parent_child && (child_of(ga, gb) || child_of(gb, ga)) {
                return false;
            }
        }
        let key = (ba.min(bb), ba.max(bb));
        f.excluded_pairs.binary_search(&key).is_err()
    }
}

#[cfg(test)]
mod tests {
    use crate::collision::CollisionModel;
    use crate::math::{Inertia, Vec3, SE3};
    use crate::model::{CollisionShape, Geometry};
    use crate::{Body, Joint, Model, ModelBuilder};

    fn sphere() -> CollisionShape {
        CollisionShape::new(Geometry::Sphere { radius: 0.1 }, SE3::identity())
    }

    fn link(name: &str) -> Body {
        Body::new(name, Inertia::solid_sphere(1.0, 0.1)).with_collision(sphere())
    }

    /// world ─fixed→ base ─rev→ l1 ─rev→ l2 ─fixed→ l2b ─rev→ l3 ; world ─free→ ball ; world plane.
    fn builder() -> ModelBuilder {
        let mut b = ModelBuilder::new("filter");
        b.add_link(Body::massless("world").with_collision(CollisionShape::new(Geometry::Plane, SE3::identity())));
        b.add_body("world", Joint::fixed("weld"), link("base"));
        b.add_body("base", Joint::revolute("j1", Vec3::z()), link("l1"));
        b.add_body("l1", Joint::revolute("j2", Vec3::y()), link("l2"));
        b.add_body("l2", Joint::fixed("w2"), link("l2b"));
        b.add_body("l2b", Joint::revolute("j3", Vec3::y()), link("l3"));
        b.add_body("world", Joint::free("free"), link("ball"));
        b
    }

    /// Index of the (single) shape on the named link; the world plane is last.
    fn shape(m: &Model, name: &str) -> usize {
        if name == "world" {
            return m.collision_model().shapes.len() - 1;
        }
        let b = m.body_index(name).unwrap();
        m.collision_model().shapes.iter().position(|s| s.body == Some(b)).unwrap()
    }

    fn allows(m: &Model, a: &str, b: &str) -> bool {
        let cm: &CollisionModel = m.collision_model();
        let (i, j) = (shape(m, a), shape(m, b));
        assert_eq!(cm.allows(i, j), cm.allows(j, i), "allows is symmetric ({a}, {b})");
        cm.allows(i, j)
    }

    #[test]
    fn same_rigid_group_and_static_pairs_never_collide() {
        let m = builder().build().unwrap();
        assert!(!allows(&m, "l2", "l2b"), "welded links");
        assert!(!allows(&m, "base", "world"), "static link vs world geometry");
        assert!(!allows(&m, "l1", "l1"), "a shape with itself");
        assert!(allows(&m, "ball", "world"));
        assert!(allows(&m, "l3", "world"));
        assert!(allows(&m, "ball", "base"), "a free body vs another articulation's static link");
    }

    #[test]
    fn parent_child_groups_are_skipped_by_default() {
        let m = builder().build().unwrap();
        assert!(!allows(&m, "l1", "base"), "child of a static link");
        assert!(!allows(&m, "l1", "l2"));
        assert!(!allows(&m, "l1", "l2b"), "l2b is welded to l1's child");
        assert!(!allows(&m, "l3", "l2"), "l3 hangs from the group of l2 and l2b");
        assert!(allows(&m, "l1", "l3"), "grandparent");
        assert!(allows(&m, "base", "l2"));
        let mut b = builder();
        b.set_skip_parent_child(false);
        let m = b.build().unwrap();
        assert!(allows(&m, "l1", "base") && allows(&m, "l1", "l2") && allows(&m, "l3", "l2b"));
        assert!(!allows(&m, "l2", "l2b"), "still one rigid group");
    }

    #[test]
    fn self_collision_is_per_articulation() {
        let mut b = builder();
        b.set_self_collision("base", false);
        let m = b.build().unwrap();
        assert!(!allows(&m, "l1", "l3") && !allows(&m, "base", "l2"));
        assert!(allows(&m, "ball", "l3"), "other articulations still collide");
        assert!(allows(&m, "l3", "world"), "world geometry is no part of the articulation");
        let mut b = builder();
        b.set_self_collision("l1", false);
        let err = b.build().unwrap_err();
        assert!(err.to_string().contains("'l1'") && err.to_string().contains("'base'"), "{err}");
    }

    #[test]
    fn group_and_mask_bits() {
        let mut b = builder();
        for l in &mut b.links {
            if l.name == "ball" {
                l.collisions[0] = sphere().with_filter(0b10, 0b10);
            }
            if l.name == "l3" {
                l.collisions[0] = sphere().with_filter(0b11, 0b01);
            }
        }
        let m = b.build().unwrap();
        assert!(!allows(&m, "ball", "world"), "world is in group 1, ball's mask is 2");
        assert!(!allows(&m, "ball", "l3"), "ball is in group 2, l3's mask is 1");
        assert!(allows(&m, "l3", "world"));
        assert!(allows(&m, "l1", "l3"));
    }

    #[test]
    fn excluded_pairs() {
        let mut b = builder();
        b.exclude_collision_pair("l3", "l1").exclude_collision_pair("ball", "l3");
        let m = b.build().unwrap();
        assert!(!allows(&m, "l1", "l3") && !allows(&m, "ball", "l3"));
        assert!(allows(&m, "ball", "l1"));
        let mut b = builder();
        b.exclude_collision_pair("l3", "nope");
        assert!(b.build().unwrap_err().to_string().contains("unknown link 'nope'"));
    }

    #[test]
    fn out_of_range_indices_are_refused() {
        let m = builder().build().unwrap();
        assert!(!m.collision_model().allows(0, 1000));
    }

    #[test]
    fn settings_round_trip_through_json() {
        let mut b = builder();
        b.set_self_collision("base", false).exclude_collision_pair("l1", "l3").set_skip_parent_child(false);
        let m = b.build().unwrap();
        let back = Model::from_json(&m.to_json().unwrap()).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.collision_settings(), m.collision_settings());
        // JSON without the collision options loads with the defaults.
        let mut json: serde_json::Value = serde_json::from_str(&m.to_json().unwrap()).unwrap();
        json.as_object_mut().unwrap().remove("collision");
        let old = Model::from_json(&json.to_string()).unwrap();
        assert_eq!(old.collision_settings(), &crate::model::CollisionSettings::default());
    }
}

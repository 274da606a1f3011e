//! Integration tests of the URDF loader and the mesh readers against the fixtures in
//! `tests/fixtures/urdf/`: a model with every joint type and mesh format, a mimic
//! joint, an explicit world link, and one malformed file per error.

use approx::assert_relative_eq;
use std::path::{Path, PathBuf};
use stiction::io::{load_mesh, load_urdf, parse_urdf, resolve_mesh_uri, UrdfModel, UrdfOptions};
use stiction::math::{Mat3, Vec3, SE3};
use stiction::model::{Geometry, VisualGeometry};
use stiction::{JointType, LoadError, Model, ModelError};

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/urdf").join(p)
}

/// The loader's options with every link kept as a body (these tests read what the
/// parser made of each link; fixed-link merging has its own tests,
/// `tests/fixed_link_merging.rs`).
fn opts() -> UrdfOptions {
    UrdfOptions { package_dirs: vec![fixture("packages")], merge_fixed_joints: false, ..Default::default() }
}

fn full() -> UrdfModel {
    load_urdf(fixture("full.urdf"), &opts()).expect("full.urdf loads")
}

fn body<'a>(m: &'a Model, name: &str) -> &'a stiction::Body {
    &m.bodies()[m.body_index(name).unwrap()]
}

fn joint<'a>(m: &'a Model, name: &str) -> &'a stiction::Joint {
    &m.joints()[m.joint_index(name).unwrap()]
}

fn mesh_of<'a>(m: &'a Model, link: &str) -> &'a stiction::model::TriangleMesh {
    body(m, link)
        .collisions
        .iter()
        .find_map(|c| match &c.geometry {
            Geometry::Mesh(mesh) => Some(mesh),
            _ => None,
        })
        .unwrap_or_else(|| panic!("link '{link}' has no collision mesh"))
}

fn extent(mesh: &stiction::model::TriangleMesh) -> (Vec3, Vec3) {
    let mut lo = Vec3::repeat(f64::INFINITY);
    let mut hi = Vec3::repeat(f64::NEG_INFINITY);
    for v in &mesh.vertices {
        lo = lo.inf(v);
        hi = hi.sup(v);
    }
    (lo, hi)
}

#[test]
fn full_model_dimensions_and_joint_types() {
    let m = full().model;
    assert_eq!(m.name(), "full");
    assert_eq!(m.nbodies(), 8);
    // revolute 1 + continuous 1 + prismatic 1 + fixed 0 + floating 7 + planar 3 + spherical 4
    assert_eq!(m.nq(), 17);
    assert_eq!(m.nv(), 15);
    assert_eq!(joint(&m, "base_root").kind, JointType::Fixed);
    assert_eq!(joint(&m, "j_rev").kind, JointType::Revolute { axis: Vec3::z() });
    assert_eq!(joint(&m, "j_cont").kind, JointType::Continuous { axis: Vec3::y() });
    // the axis "2 0 0" is normalised
    assert_eq!(joint(&m, "j_pris").kind, JointType::Prismatic { axis: Vec3::x() });
    assert_eq!(joint(&m, "j_fixed").kind, JointType::Fixed);
    assert_eq!(joint(&m, "j_float").kind, JointType::Free);
    assert_eq!(joint(&m, "j_planar").kind, JointType::Planar { normal: Vec3::z() });
    assert_eq!(joint(&m, "j_sph").kind, JointType::Spherical);
    assert_relative_eq!(m.total_mass(), 6.5, epsilon = 1e-12);
    // parents follow the URDF tree
    let parent_name = |link: &str| m.parent(m.body_index(link).unwrap()).map(|p| m.bodies()[p].name.clone());
    assert_eq!(parent_name("l_cont").as_deref(), Some("l_rev"));
    assert_eq!(parent_name("l_sph").as_deref(), Some("l_planar"));
    assert_eq!(parent_name("base"), None);
}

#[test]
fn joint_placements() {
    let m = full().model;
    let x = &joint(&m, "j_rev").placement;
    let want = SE3::from_xyz_rpy(&Vec3::new(0.0, 0.0, 0.2), &Vec3::new(0.0, 0.0, 0.5));
    assert_relative_eq!(x.rot, want.rot, epsilon = 1e-12);
    assert_relative_eq!(x.trans, want.trans, epsilon = 1e-12);
    assert_relative_eq!(x.rot[(1, 0)], 0.5f64.sin(), epsilon = 1e-12);
    assert_relative_eq!(joint(&m, "j_float").placement.trans, Vec3::new(0.0, 0.5, 0.0));
    assert_relative_eq!(joint(&m, "j_sph").placement.trans, Vec3::new(0.0, 0.0, -0.1));
    assert_relative_eq!(joint(&m, "j_fixed").placement.rot, Mat3::identity());
}

#[test]
fn limits_damping_friction() {
    let m = full().model;
    let j = joint(&m, "j_rev");
    assert_eq!(j.limits.lower, vec![-1.5]);
    assert_eq!(j.limits.upper, vec![1.5]);
    assert_eq!(j.limits.velocity, vec![3.0]);
    assert_eq!(j.limits.effort, vec![20.0]);
    assert_eq!(j.dynamics.damping, vec![0.5]);
    assert_eq!(j.dynamics.friction, vec![0.1]);
    let j = joint(&m, "j_cont");
    assert_eq!(j.limits.lower, vec![f64::NEG_INFINITY]);
    assert_eq!(j.limits.upper, vec![f64::INFINITY]);
    assert_eq!(j.limits.velocity, vec![5.0]);
    assert_eq!(j.dynamics.damping, vec![0.05]);
    assert_eq!(j.dynamics.friction, vec![0.0]);
    let j = joint(&m, "j_pris");
    assert_eq!((j.limits.lower.clone(), j.limits.upper.clone()), (vec![0.0], vec![0.3]));
    assert_eq!(j.dynamics.friction, vec![2.5]);
    assert_eq!(j.dynamics.damping, vec![0.0]);
    // model-level vectors carry the same values
    let v = m.joint_v_index("j_rev").unwrap();
    assert_eq!(m.damping()[v], 0.5);
    assert_eq!(m.joint_friction()[v], 0.1);
    assert_eq!(m.effort_limits()[v], 20.0);
}

#[test]
fn inertial_frames_are_rotated_into_the_link_frame() {
    let m = full().model;
    // base: yaw 90° swaps the x and y moments
    let i = body(&m, "base").inertia;
    assert_relative_eq!(i.mass, 2.0);
    assert_relative_eq!(i.com(), Vec3::new(0.1, 0.0, 0.05), epsilon = 1e-12);
    assert_relative_eq!(i.inertia_about_com(), Mat3::from_diagonal(&Vec3::new(0.2, 0.1, 0.3)), epsilon = 1e-12);
    // l_rev: yaw 0.5 about z, by hand: R diag(a, b, c) Rᵀ
    let (a, b, c) = (0.01, 0.02, 0.025);
    let (s, co) = 0.5f64.sin_cos();
    let want = Mat3::new(
        a * co * co + b * s * s,
        (a - b) * s * co,
        0.0,
        (a - b) * s * co,
        a * s * s + b * co * co,
        0.0,
        0.0,
        0.0,
        c,
    );
    let i = body(&m, "l_rev").inertia;
    assert_relative_eq!(i.com(), Vec3::new(0.0, 0.0, 0.1), epsilon = 1e-12);
    assert_relative_eq!(i.inertia_about_com(), want, epsilon = 1e-12);
    // l_float: roll 90° swaps the y and z moments
    let i = body(&m, "l_float").inertia;
    assert_relative_eq!(i.inertia_about_com(), Mat3::from_diagonal(&Vec3::new(0.001, 0.0025, 0.002)), epsilon = 1e-12);
    // the massless link is zero
    assert_eq!(body(&m, "l_fixed").inertia.mass, 0.0);
    // products of inertia are kept
    assert_relative_eq!(body(&m, "l_planar").inertia.inertia_about_com()[(0, 1)], 0.0005, epsilon = 1e-15);
}

#[test]
fn collision_meshes_every_format() {
    let m = full().model;
    // OBJ through package://, quads triangulated, scale 0.5
    let cube = mesh_of(&m, "l_rev");
    assert_eq!(cube.vertices.len(), 8);
    assert_eq!(cube.triangles.len(), 12);
    assert_eq!(cube.source.as_deref(), Some("package://testpkg/meshes/cube.obj"));
    let (lo, hi) = extent(cube);
    assert_relative_eq!(lo, Vec3::repeat(-0.25), epsilon = 1e-7);
    assert_relative_eq!(hi, Vec3::repeat(0.25), epsilon = 1e-7);
    // ASCII STL through a relative path
    let t = mesh_of(&m, "l_cont");
    assert_eq!((t.vertices.len(), t.triangles.len()), (4, 4));
    assert_eq!(t.source.as_deref(), Some("meshes/tetra_ascii.stl"));
    // binary STL, scale 2
    let t = mesh_of(&m, "l_pris");
    assert_eq!((t.vertices.len(), t.triangles.len()), (4, 4));
    let (lo, hi) = extent(t);
    assert_relative_eq!(lo, Vec3::zeros());
    assert_relative_eq!(hi, Vec3::repeat(2.0));
    // Collada: centimetres, y-up, node translation of 10 cm along y (up)
    let t = mesh_of(&m, "l_float");
    assert_eq!((t.vertices.len(), t.triangles.len()), (4, 4));
    let want =
        [Vec3::new(0.0, 0.0, 0.1), Vec3::new(0.01, 0.0, 0.1), Vec3::new(0.0, 0.0, 0.11), Vec3::new(0.0, -0.01, 0.1)];
    for (v, w) in t.vertices.iter().zip(&want) {
        assert_relative_eq!(v, w, epsilon = 1e-12);
    }
    for tri in &t.triangles {
        assert!(tri.iter().all(|&i| (i as usize) < t.vertices.len()));
    }
}

#[test]
fn collision_primitives_and_visuals() {
    let m = full().model;
    let base = body(&m, "base");
    assert_eq!(base.collisions.len(), 1);
    assert_eq!(base.collisions[0].name.as_deref(), Some("base_box"));
    assert_eq!(base.collisions[0].geometry, Geometry::Box { half_extents: Vec3::new(0.2, 0.1, 0.05) });
    assert_relative_eq!(base.collisions[0].origin.trans, Vec3::new(0.0, 0.0, 0.1));
    // visual meshes are kept as resolved paths, never loaded
    match &base.visuals[0].geometry {
        VisualGeometry::MeshFile { path, scale } => {
            assert!(path.ends_with("packages/testpkg/meshes/cube.obj"), "{path}");
            assert!(Path::new(path).is_file());
            assert_eq!(*scale, Vec3::new(0.4, 0.2, 0.1));
        }
        other => panic!("expected a mesh file, got {other:?}"),
    }
    // named robot-level material, inline material
    assert_eq!(base.visuals[0].rgba, Some([0.0, 0.0, 1.0, 1.0]));
    let rev = body(&m, "l_rev");
    assert_eq!(rev.visuals[0].geometry, VisualGeometry::Primitive(Geometry::Cylinder { radius: 0.05, length: 0.2 }));
    assert_eq!(rev.visuals[0].rgba, Some([1.0, 0.0, 0.0, 1.0]));
    assert_eq!(body(&m, "l_sph").visuals[0].rgba, Some([0.0, 0.0, 1.0, 1.0]));
    let fixed = body(&m, "l_fixed");
    assert_eq!(fixed.collisions[0].geometry, Geometry::Sphere { radius: 0.05 });
    assert_eq!(fixed.collisions[1].geometry, Geometry::Capsule { radius: 0.02, length: 0.1 });
    let pris = body(&m, "l_pris");
    assert_eq!(pris.collisions[1].geometry, Geometry::Cylinder { radius: 0.03, length: 0.6 });
}

#[test]
fn ignored_elements_warn_once_each() {
    let w = full().warnings;
    assert_eq!(w.len(), 4, "{w:#?}");
    for needle in ["<calibration> of joint 'j_rev'", "<safety_controller> of joint 'j_rev'", "<transmission> 't_rev'"] {
        assert!(w.iter().any(|s| s.contains(needle)), "no warning with {needle:?} in {w:#?}");
    }
    assert!(w.iter().any(|s| s.contains("<gazebo> 'base'")));
}

#[test]
fn floating_base_adds_a_free_joint() {
    let fixed = full().model;
    let o = UrdfOptions { floating_base: true, ..opts() };
    let m = load_urdf(fixture("full.urdf"), &o).unwrap().model;
    assert_eq!(m.nq(), fixed.nq() + 7);
    assert_eq!(m.nv(), fixed.nv() + 6);
    assert_eq!(joint(&m, "base_root").kind, JointType::Free);
}

#[test]
fn skipping_collision_meshes_warns() {
    let o = UrdfOptions { load_collision_meshes: false, ..opts() };
    let r = load_urdf(fixture("full.urdf"), &o).unwrap();
    let skipped: Vec<&String> = r.warnings.iter().filter(|w| w.contains("skipped")).collect();
    assert_eq!(skipped.len(), 4, "{:#?}", r.warnings);
    assert!(skipped.iter().any(|w| w.contains("package://testpkg/meshes/tetra.dae") && w.contains("link 'l_float'")));
    assert!(body(&r.model, "l_rev").collisions.is_empty());
    assert_eq!(body(&r.model, "l_pris").collisions.len(), 1);
    assert_eq!(body(&r.model, "base").collisions.len(), 1);
}

#[test]
fn package_dir_may_be_the_package_itself() {
    let o = UrdfOptions { package_dirs: vec![fixture("packages/testpkg")], ..Default::default() };
    let m = load_urdf(fixture("full.urdf"), &o).unwrap().model;
    assert_eq!(mesh_of(&m, "l_rev").vertices.len(), 8);
    let p = resolve_mesh_uri("package://testpkg/meshes/cube.obj", None, &[fixture("packages")]).unwrap();
    assert_eq!(p, fixture("packages/testpkg/meshes/cube.obj"));
    let abs = format!("file://{}", fixture("meshes/tetra_ascii.stl").display());
    assert_eq!(resolve_mesh_uri(&abs, None, &[]).unwrap(), fixture("meshes/tetra_ascii.stl"));
}

#[test]
fn package_uri_without_package_dirs_is_an_error() {
    let e = load_urdf(fixture("full.urdf"), &UrdfOptions::default()).unwrap_err();
    let LoadError::Mesh { path, reason } = &e else { panic!("expected a mesh error, got {e:?}") };
    assert_eq!(path, "package://testpkg/meshes/cube.obj");
    assert!(reason.contains("no package directories"), "{reason}");
    assert!(reason.contains("link 'l_rev'"), "{reason}");
}

#[test]
fn mimic_warns_or_fails_in_strict_mode() {
    let r = load_urdf(fixture("mimic.urdf"), &UrdfOptions::default()).unwrap();
    assert_eq!(r.model.nv(), 2);
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].contains("joint 'finger_r_joint'") && r.warnings[0].contains("independently"));
    let strict = UrdfOptions { strict: true, ..Default::default() };
    let e = load_urdf(fixture("mimic.urdf"), &strict).unwrap_err();
    assert!(matches!(&e, LoadError::Unsupported { element, .. } if element == "mimic of joint 'finger_r_joint'"));
    assert!(e.to_string().contains("finger_l_joint"), "{e}");
}

#[test]
fn world_link_is_the_world_frame() {
    let r = Model::from_urdf(fixture("world.urdf"), &UrdfOptions::default()).unwrap();
    let m = r.model;
    assert_eq!((m.nq(), m.nv(), m.nbodies()), (1, 1, 1));
    assert_eq!(m.world_shapes().len(), 1);
    assert_eq!(m.world_shapes()[0].geometry, Geometry::Box { half_extents: Vec3::new(5.0, 5.0, 0.05) });
    assert!(r.warnings.is_empty(), "{:#?}", r.warnings);
    // a floating base cannot be added to a tree attached to the world
    let o = UrdfOptions { floating_base: true, ..Default::default() };
    let e = load_urdf(fixture("world.urdf"), &o).unwrap_err();
    assert!(matches!(e, LoadError::Model { source: ModelError::Invalid(_), .. }), "{e:?}");
}

#[test]
fn parse_from_string_with_base_dir() {
    let xml = std::fs::read_to_string(fixture("full.urdf")).unwrap();
    let r = parse_urdf(&xml, Some(&fixture("")), &opts()).unwrap();
    assert_eq!(r.model.nq(), 17);
    // without a base directory, relative meshes resolve against the current directory and fail
    let e = parse_urdf(&xml, Some(Path::new("/nonexistent")), &opts()).unwrap_err();
    assert!(matches!(&e, LoadError::Mesh { path, .. } if path == "meshes/tetra_ascii.stl"), "{e:?}");
    // errors from text name the source as <string>
    let e = parse_urdf("<robot name='r'><link/></robot>", None, &opts()).unwrap_err();
    assert!(e.to_string().starts_with("<string>:"), "{e}");
}

#[test]
fn missing_file_is_an_io_error() {
    let e = load_urdf(fixture("nope.urdf"), &opts()).unwrap_err();
    assert!(matches!(&e, LoadError::Io { path, .. } if path.ends_with("nope.urdf")), "{e:?}");
}

// ---- malformed files: one specific error each, naming the element ----

fn bad(name: &str) -> (LoadError, String) {
    let e = load_urdf(fixture(&format!("bad/{name}")), &opts()).expect_err(name);
    let msg = e.to_string();
    assert!(msg.contains(name) || matches!(e, LoadError::Mesh { .. }), "message does not name the file: {msg}");
    (e, msg)
}

fn malformed(name: &str, element: &str, reason_has: &str) -> String {
    let (e, msg) = bad(name);
    match &e {
        LoadError::Malformed { element: el, reason, .. } => {
            assert_eq!(el, element, "{msg}");
            assert!(reason.contains(reason_has), "{msg}");
            assert!(reason.contains("(line "), "{msg}");
        }
        other => panic!("{name}: expected Malformed, got {other:?}"),
    }
    msg
}

fn model_error(name: &str) -> (ModelError, String) {
    let (e, msg) = bad(name);
    match e {
        LoadError::Model { source, .. } => (source, msg),
        other => panic!("{name}: expected a model error, got {other:?}"),
    }
}

#[test]
fn bad_xml_syntax() {
    let (e, msg) = bad("bad_xml.urdf");
    assert!(matches!(&e, LoadError::Malformed { element, .. } if element == "XML document"), "{msg}");
    assert!(msg.contains("link"), "{msg}");
}

#[test]
fn missing_robot_root() {
    malformed("no_robot.urdf", "robot", "<model>");
}

#[test]
fn unknown_joint_type() {
    malformed("unknown_joint_type.urdf", "joint 'elbow'", "unknown joint type 'hinge'");
}

#[test]
fn joint_to_missing_link() {
    let (e, msg) = model_error("missing_link.urdf");
    assert!(matches!(&e, ModelError::UnknownLink { role: "child", link, .. } if link == "forearm"), "{msg}");
    assert!(msg.contains("joint 'elbow'"), "{msg}");
}

#[test]
fn missing_name_attribute() {
    malformed("missing_name.urdf", "link", "missing attribute 'name'");
}

#[test]
fn non_numeric_xyz() {
    malformed("non_numeric_xyz.urdf", "origin of joint 'elbow'", "'abc' is not a number");
}

#[test]
fn wrong_number_of_components() {
    malformed("wrong_count.urdf", "origin of joint 'elbow'", "has 2 numbers");
}

#[test]
fn missing_inertia_attribute() {
    malformed("missing_inertia_attr.urdf", "inertia of link 'arm'", "missing attribute 'izz'");
}

#[test]
fn nan_value() {
    malformed("nan_mass.urdf", "mass of link 'arm'", "not a finite number");
}

#[test]
fn revolute_without_limit() {
    malformed("revolute_no_limit.urdf", "joint 'elbow'", "requires <limit>");
}

#[test]
fn negative_mass() {
    let (e, msg) = model_error("negative_mass.urdf");
    assert!(matches!(e, ModelError::InvalidMass { mass, .. } if mass == -1.0), "{msg}");
    assert!(msg.contains("link 'arm'"), "{msg}");
}

/// A fixture of `bad/` that loads only with a warning: the strict loader's model error
/// and message, and the lenient loader's warnings.
fn strict_model_error(name: &str) -> (ModelError, String, Vec<String>) {
    let path = fixture(&format!("bad/{name}"));
    let strict = UrdfOptions { strict: true, ..opts() };
    let e = load_urdf(&path, &strict).expect_err(name);
    let msg = e.to_string();
    assert!(msg.contains(name), "message does not name the file: {msg}");
    let LoadError::Model { source, .. } = e else { panic!("{name}: expected a model error, got {e:?}") };
    let warnings = load_urdf(&path, &opts()).unwrap_or_else(|e| panic!("{name}: {e}")).warnings;
    (source, msg, warnings)
}

#[test]
fn non_positive_definite_inertia() {
    let (e, msg, warnings) = strict_model_error("non_pd_inertia.urdf");
    assert!(matches!(e, ModelError::InvalidInertia { reason: "positive definite", .. }), "{msg}");
    assert!(msg.contains("link 'arm'"), "{msg}");
    // Not strict: the nearest physical tensor, with a warning naming the link.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("link 'arm'") && warnings[0].contains("nearest physical"), "{warnings:?}");
}

#[test]
fn inertia_violating_triangle_inequality() {
    let (e, msg, warnings) = strict_model_error("triangle_inequality.urdf");
    assert!(matches!(e, ModelError::TriangleInequality { .. }), "{msg}");
    assert!(msg.contains("link 'arm'"), "{msg}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("link 'arm'") && warnings[0].contains("nearest physical"), "{warnings:?}");
}

#[test]
fn zero_length_axis() {
    let (e, msg) = model_error("zero_axis.urdf");
    assert!(matches!(e, ModelError::ZeroAxis { .. }), "{msg}");
    assert!(msg.contains("joint 'elbow'"), "{msg}");
}

#[test]
fn link_with_two_parents() {
    let (e, msg) = model_error("two_parents.urdf");
    assert!(matches!(e, ModelError::MultipleParents { .. }), "{msg}");
    assert!(msg.contains("link 'arm'") && msg.contains("elbow, wrist"), "{msg}");
}

#[test]
fn kinematic_loop() {
    let (e, msg) = model_error("loop.urdf");
    assert!(matches!(e, ModelError::Cycle { .. }), "{msg}");
    assert!(msg.contains("'a'") && msg.contains("'b'"), "{msg}");
}

#[test]
fn disconnected_tree() {
    let (e, msg) = model_error("two_roots.urdf");
    assert!(matches!(e, ModelError::Disconnected { .. }), "{msg}");
    assert!(msg.contains("'other'"), "{msg}");
}

#[test]
fn duplicate_link_name() {
    let (e, msg) = model_error("duplicate_link.urdf");
    assert!(matches!(e, ModelError::DuplicateName { kind: "link", .. }), "{msg}");
    assert!(msg.contains("'arm'"), "{msg}");
}

fn mesh_error(name: &str, path_has: &str, reason_has: &str) {
    let (e, msg) = bad(name);
    match &e {
        LoadError::Mesh { path, reason } => {
            assert!(path.contains(path_has), "{msg}");
            assert!(reason.contains(reason_has), "{msg}");
            assert!(reason.contains("collision 0 of link 'base'"), "{msg}");
        }
        other => panic!("{name}: expected a mesh error, got {other:?}"),
    }
}

#[test]
fn missing_mesh_file() {
    mesh_error("missing_mesh.urdf", "meshes/does_not_exist.stl", "file not found; searched");
}

#[test]
fn unresolvable_package() {
    mesh_error("missing_package.urdf", "package://nopkg/meshes/cube.obj", "searched");
    let (_, msg) = bad("missing_package.urdf");
    assert!(msg.contains("packages/nopkg/meshes/cube.obj"), "{msg}");
}

#[test]
fn unknown_mesh_format() {
    mesh_error("unknown_mesh_format.urdf", "cube.ply", "unsupported mesh format 'ply'");
}

#[test]
fn mesh_index_out_of_range() {
    mesh_error("corrupt_mesh.urdf", "bad_index.dae", "vertex index 7 out of range (3 positions)");
}

#[test]
fn unknown_geometry() {
    let (e, msg) = bad("unknown_geometry.urdf");
    assert!(
        matches!(&e, LoadError::Unsupported { element, .. } if element == "geometry of collision 0 of link 'base'"),
        "{msg}"
    );
    assert!(msg.contains("<heightmap>"), "{msg}");
}

// ---- mesh readers directly ----

fn mesh_fixture(name: &str) -> PathBuf {
    fixture(&format!("meshes_bad/{name}"))
}

#[test]
fn mesh_reader_errors() {
    let one = Vec3::repeat(1.0);
    let cases = [
        ("empty.obj", "the mesh is empty"),
        ("garbage.stl", "invalid STL"),
        ("truncated.dae", "invalid XML"),
        ("bad_index.dae", "out of range"),
        ("missing.obj", "file not found"),
    ];
    for (name, want) in cases {
        let e = load_mesh(&mesh_fixture(name), &one).unwrap_err();
        let LoadError::Mesh { path, reason } = &e else { panic!("{name}: {e:?}") };
        assert!(path.ends_with(name), "{e}");
        assert!(reason.contains(want), "{name}: {reason}");
    }
}

/// Writes a binary STL (80-byte header, count, 50 bytes per triangle).
fn write_binary_stl(path: &Path, tris: &[[[f32; 3]; 3]]) {
    let mut b = vec![b' '; 80];
    b[..10].copy_from_slice(b"binary stl");
    b.extend((tris.len() as u32).to_le_bytes());
    for t in tris {
        b.extend([0f32; 3].iter().flat_map(|x| x.to_le_bytes()));
        b.extend(t.iter().flatten().flat_map(|x| x.to_le_bytes()));
        b.extend([0u8; 2]);
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn binary_stl_written_here_matches_fixture_and_extension_is_case_insensitive() {
    let dir = std::env::temp_dir().join(format!("stiction-io-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("TETRA.STL");
    let (o, x, y, z) = ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]);
    write_binary_stl(&path, &[[o, y, x], [o, x, z], [o, z, y], [x, y, z]]);
    let mine = load_mesh(&path, &Vec3::repeat(1.0)).unwrap();
    let theirs = load_mesh(&fixture("meshes/tetra_binary.stl"), &Vec3::repeat(1.0)).unwrap();
    assert_eq!(mine.vertices, theirs.vertices);
    assert_eq!(mine.triangles, theirs.triangles);
    let ascii = load_mesh(&fixture("meshes/tetra_ascii.stl"), &Vec3::repeat(1.0)).unwrap();
    assert_eq!(mine.triangles.len(), ascii.triangles.len());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mirroring_scale_rewinds_triangles() {
    let p = fixture("meshes/tetra_ascii.stl");
    let a = load_mesh(&p, &Vec3::repeat(1.0)).unwrap();
    let b = load_mesh(&p, &Vec3::new(-1.0, 1.0, 1.0)).unwrap();
    for (ta, tb) in a.triangles.iter().zip(&b.triangles) {
        assert_eq!([ta[0], ta[2], ta[1]], *tb);
    }
    assert_eq!(b.vertices[1], Vec3::new(-a.vertices[1].x, a.vertices[1].y, a.vertices[1].z));
}

// ---- the loaded models simulate ----

#[test]
fn loaded_pendulum_has_the_right_dynamics() {
    let m = load_urdf(fixture("world.urdf"), &UrdfOptions::default()).unwrap().model;
    let mut data = stiction::Data::new(&m);
    let theta = 0.5f64;
    let ddq = stiction::dynamics::aba(&m, &mut data, &[theta], &[0.0], &[0.0], None).unwrap()[0];
    // point-like bob 1 m below the hinge: |θ̈| = m g l sin θ / (I + m l²)
    assert_relative_eq!(ddq.abs(), 9.81 * theta.sin() / 1.001, epsilon = 1e-9);
    // gravity pulls it back towards the bottom
    assert!(ddq * theta < 0.0);
}

#[test]
fn loaded_full_model_has_finite_forward_dynamics() {
    for floating_base in [false, true] {
        let m = load_urdf(fixture("full.urdf"), &UrdfOptions { floating_base, ..opts() }).unwrap().model;
        let mut data = stiction::Data::new(&m);
        let q = m.random_configuration(7);
        let v = vec![0.1; m.nv()];
        let tau = vec![0.0; m.nv()];
        let ddq = stiction::dynamics::aba(&m, &mut data, q.as_slice(), &v, &tau, None).unwrap();
        assert_eq!(ddq.len(), m.nv());
        assert!(ddq.iter().all(|x| x.is_finite()), "{ddq:?}");
    }
}

#[test]
fn unknown_elements_warn_where_they_are() {
    let xml = r#"<robot name="r">
      <link name="base">
        <inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
        <collision><geometry><sphere radius="0.1"/></geometry><contact_coefficients mu="1"/></collision>
        <visual><geometry><box size="1 1 1"/></geometry><material name="nowhere"/></visual>
        <self_collision_checking/>
      </link>
      <extra/>
    </robot>"#;
    let r = parse_urdf(xml, None, &UrdfOptions::default()).unwrap();
    let w = &r.warnings;
    assert_eq!(w.len(), 4, "{w:#?}");
    assert!(w[0].contains("<contact_coefficients> in collision 0 of link 'base'"), "{w:#?}");
    assert!(w[1].contains("material 'nowhere' is not defined"), "{w:#?}");
    assert!(w[2].contains("<self_collision_checking> in link 'base'"), "{w:#?}");
    assert!(w[3].contains("unknown element <extra> in <robot>"), "{w:#?}");
    assert!(w[0].starts_with("<string>:4:"), "{w:#?}");
}

/// A base and an `arm` on a revolute joint; `inertial` and `collision` are the arm's
/// elements.
fn arm_urdf(inertial: &str, collision: &str) -> String {
    format!(
        r#"<robot name="r">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="arm">{inertial}{collision}</link>
  <joint name="elbow" type="revolute">
    <parent link="base"/><child link="arm"/>
    <limit lower="-1" upper="1" velocity="1" effort="1"/>
  </joint>
</robot>"#
    )
}

fn inertial(mass: f64, d: [f64; 3]) -> String {
    format!(
        r#"<inertial><mass value="{mass}"/><inertia ixx="{}" ixy="0" ixz="0" iyy="{}" iyz="0" izz="{}"/></inertial>"#,
        d[0], d[1], d[2]
    )
}

/// Sorted principal moments of the arm's inertia about its centre of mass.
fn arm_moments(m: &Model) -> [f64; 3] {
    let e = body(m, "arm").inertia.inertia_about_com().symmetric_eigenvalues();
    let mut v = [e[0], e[1], e[2]];
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// The loading policy for inertias (docs/models.md): rounding is repaired with a
/// warning naming the link and the change; `strict` keeps the errors.
#[test]
fn rounded_inertias_are_repaired_with_a_warning_and_strict_keeps_the_errors() {
    let strict = UrdfOptions { strict: true, ..Default::default() };
    // The triangle inequality broken by 2e-3 relative: projected.
    let xml = arm_urdf(&inertial(1.0, [0.01, 0.01, 0.02004]), "");
    let r = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap();
    let m = arm_moments(&r.model);
    assert_relative_eq!(m[0] + m[1], m[2], epsilon = 1e-15);
    assert_relative_eq!(m[2], 0.02004 - 0.00004 / 3.0, epsilon = 1e-15);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(r.warnings[0].contains("inertia of link 'arm'") && r.warnings[0].contains("triangle"), "{:?}", r.warnings);
    let e = parse_urdf(&xml, None, &strict).unwrap_err();
    assert!(matches!(e, LoadError::Model { source: ModelError::TriangleInequality { .. }, .. }), "{e:?}");
    // A thin rod's axial moment printed as −2e−22: raised to 1e-6 of the largest.
    let xml = arm_urdf(&inertial(1.0, [-2e-22, 0.01, 0.01]), "");
    let r = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap();
    assert_relative_eq!(arm_moments(&r.model)[0], 1e-8, epsilon = 1e-20);
    assert!(r.warnings[0].contains("raised"), "{:?}", r.warnings);
    let e = parse_urdf(&xml, None, &strict).unwrap_err();
    assert!(matches!(e, LoadError::Model { source: ModelError::InvalidInertia { .. }, .. }), "{e:?}");
    // Gross violations: the nearest physical tensor in second moments, with a warning;
    // strict loading refuses them. (0.01, 0.01, 0.05): s = (0.025, 0.025, −0.015) → the
    // third clamped to 2.5e−8, so λ = (0.025 + 2.5e−8, 0.025 + 2.5e−8, 0.05).
    let xml = arm_urdf(&inertial(1.0, [0.01, 0.01, 0.05]), "");
    let r = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap();
    let m = arm_moments(&r.model);
    for (a, b) in m.iter().zip([0.025 + 2.5e-8, 0.025 + 2.5e-8, 0.05]) {
        assert_relative_eq!(*a, b, epsilon = 1e-15);
    }
    assert!(r.warnings[0].contains("nearest physical") && r.warnings[0].contains("5.000000e-2"), "{:?}", r.warnings);
    assert!(parse_urdf(&xml, None, &strict).is_err());
    let xml = arm_urdf(&inertial(1.0, [-0.01, 0.01, 0.01]), "");
    let r = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap();
    assert!(arm_moments(&r.model)[0] > 0.0);
    assert!(parse_urdf(&xml, None, &strict).is_err());
    // Negative definite: no mass distribution near it; an error either way.
    let xml = arm_urdf(&inertial(1.0, [-0.01, -0.01, -0.01]), "");
    assert!(parse_urdf(&xml, None, &UrdfOptions::default()).is_err());
}

#[test]
fn a_link_with_mass_and_no_inertia_gets_its_shapes_inertia() {
    let strict = UrdfOptions { strict: true, ..Default::default() };
    let boxed = r#"<collision><geometry><box size="0.1 0.2 0.3"/></geometry></collision>"#;
    let xml = arm_urdf(&inertial(2.0, [0.0; 3]), boxed);
    let r = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap();
    let expected = Vec3::new(0.04 + 0.09, 0.01 + 0.09, 0.01 + 0.04) * (2.0 / 12.0);
    let ic = body(&r.model, "arm").inertia.inertia_about_com();
    assert!((ic - Mat3::from_diagonal(&expected)).abs().max() < 1e-15, "{ic}");
    assert!(
        r.warnings[0].contains("link 'arm' has mass 2 kg but a zero inertia tensor") && r.warnings[0].contains("box"),
        "{:?}",
        r.warnings
    );
    assert!(parse_urdf(&xml, None, &strict).is_err());
    // No collision shape: a sphere of water's density (radius (3m/(4π·1000))^(1/3)).
    let xml = arm_urdf(&inertial(2.0, [0.0; 3]), "");
    let r = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap();
    let radius = (3.0 * 2.0 / (4.0 * std::f64::consts::PI * 1000.0)).cbrt();
    assert_relative_eq!(arm_moments(&r.model)[0], 0.4 * 2.0 * radius * radius, epsilon = 1e-15);
    assert!(r.warnings[0].contains("sphere"), "{:?}", r.warnings);
}

#[test]
fn a_massless_link_with_an_inertia_tensor_becomes_a_massless_frame() {
    // A massless leaf welded to the arm (a sensor frame written with a tiny tensor).
    let xml = arm_urdf(&inertial(1.0, [0.01, 0.01, 0.01]), "").replace(
        "</robot>",
        r#"<link name="camera">{I}</link>
  <joint name="mount" type="fixed"><parent link="arm"/><child link="camera"/></joint>
</robot>"#
            .replace("{I}", &inertial(0.0, [1e-6, 1e-6, 1e-6]))
            .as_str(),
    );
    let r = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap();
    // Merged into the arm (the default), it is a frame with its own (cleared) inertia.
    let camera = &r.model.frames()[r.model.frame_index("camera").unwrap()];
    assert_eq!(camera.body, r.model.body_index("arm").unwrap());
    assert_eq!(camera.inertia.inertia_about_com(), Mat3::zeros());
    assert!(r.warnings[0].contains("link 'camera' has no mass"), "{:?}", r.warnings);
    let strict = UrdfOptions { strict: true, ..Default::default() };
    assert!(parse_urdf(&xml, None, &strict).is_err());
}

#[test]
fn package_uris_with_an_empty_host_resolve() {
    let p = resolve_mesh_uri("package:///testpkg/meshes/cube.obj", None, &[fixture("packages")]).unwrap();
    assert_eq!(p, fixture("packages/testpkg/meshes/cube.obj"));
}

/// Collision meshes whose triangles do not share vertices (a triangle soup, as STL files
/// and many exporters write them) are welded before the checks, with a warning; strict
/// loading refuses them as before.
#[test]
fn triangle_soups_are_welded_with_a_warning() {
    // On the base, welded to the world: a static triangle mesh, checked as it is (a mesh
    // on a moving link collides as the convex hull of its vertices).
    let soup = r#"<collision><geometry><mesh filename="meshes/cube_soup.obj"/></geometry></collision></link>"#;
    let xml = arm_urdf(&inertial(1.0, [0.01, 0.01, 0.01]), "").replacen(
        "</inertial></link>",
        &format!("</inertial>{soup}"),
        1,
    );
    let r = parse_urdf(&xml, Some(&fixture("")), &UrdfOptions::default()).unwrap();
    let Geometry::Mesh(mesh) = &body(&r.model, "base").collisions[0].geometry else { panic!("a mesh") };
    assert_eq!(mesh.triangles.len(), 12);
    let used: std::collections::BTreeSet<u32> = mesh.triangles.iter().flatten().copied().collect();
    assert_eq!(used.len(), 8, "the 36 corners welded into the cube's 8");
    assert!(
        r.warnings.iter().any(|w| w.contains("28 duplicate vertices welded, 0 degenerate triangles dropped")),
        "{:?}",
        r.warnings
    );
    let strict = UrdfOptions { strict: true, ..Default::default() };
    let e = parse_urdf(&xml, Some(&fixture("")), &strict).unwrap_err();
    assert!(e.to_string().contains("duplicate vertices"), "{e}");
}

/// Welding drops the triangles that collapse (slivers thinner than the tolerance) and
/// leaves distinct vertices alone.
#[test]
fn welding_drops_collapsed_triangles_only() {
    use stiction::io::mesh::weld_vertices;
    use stiction::model::TriangleMesh;
    let v = vec![
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(1.0, 0.0, 0.0),
        Vec3::new(0.0, 1.0, 0.0),
        Vec3::new(1.0, 1e-12, 0.0), // a copy of vertex 1 within 1e-9 of the size
        Vec3::new(5.0, 5.0, 5.0),   // unused: not counted
    ];
    let mut mesh = TriangleMesh { vertices: v, triangles: vec![[0, 1, 2], [1, 3, 2], [0, 3, 2]], source: None };
    assert_eq!(weld_vertices(&mut mesh, 1e-9), (1, 1));
    assert_eq!(mesh.triangles, vec![[0, 1, 2], [0, 1, 2]]);
    let mut clean = TriangleMesh { vertices: mesh.vertices.clone(), triangles: vec![[0, 1, 2]], source: None };
    assert_eq!(weld_vertices(&mut clean, 1e-9), (0, 0));
}

/// A chain base → a (axis `ax`) → b (axis `bx`) → c (axis `cx`), with masses `ma`, `mb`
/// on a and b and a 1 kg link c, its centre of mass 0.2 m along x.
fn three_hinges(axes: [&str; 3], ma: f64, mb: f64) -> String {
    let link = |name: &str, m: f64| {
        if m > 0.0 {
            format!(r#"<link name="{name}">{}</link>"#, inertial(m, [0.01, 0.01, 0.01]))
        } else {
            format!(r#"<link name="{name}"/>"#)
        }
    };
    let joint = |name: &str, parent: &str, child: &str, axis: &str| {
        format!(
            r#"<joint name="{name}" type="continuous"><parent link="{parent}"/><child link="{child}"/><axis xyz="{axis}"/></joint>"#
        )
    };
    format!(
        r#"<robot name="r">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  {}{}
  <link name="c"><inertial><origin xyz="0.2 0 0"/><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial></link>
  {}{}{}
</robot>"#,
        link("a", ma),
        link("b", mb),
        joint("j1", "base", "a", axes[0]),
        joint("j2", "a", "b", axes[1]),
        joint("j3", "b", "c", axes[2])
    )
}

/// Moving links without mass (docs/models.md, "Loading policy"): a ball joint written
/// as three hinges through two massless "virtual" links loads with a warning per link
/// and a positive-definite mass matrix; strict loading refuses it; a massless link that
/// nothing with inertia follows (two coaxial hinges) and a moving subtree without any
/// mass stay errors that name the joint or link.
#[test]
fn massless_moving_links_load_when_the_mass_matrix_is_positive_definite() {
    use stiction::dynamics::{check_mass_matrix, crba, Data};
    let strict = UrdfOptions { strict: true, ..Default::default() };
    let xml = three_hinges(["1 0 0", "0 1 0", "0 0 1"], 0.0, 0.0);
    let r = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap();
    assert_eq!(r.model.nv(), 3);
    let massless: Vec<&String> = r.warnings.iter().filter(|w| w.contains("moves without mass")).collect();
    assert_eq!(massless.len(), 2, "{:?}", r.warnings);
    assert!(massless[0].contains("link 'a'") && massless[1].contains("link 'b'"), "{massless:?}");
    let q = r.model.random_configuration(4);
    let mut data = Data::new(&r.model);
    assert!(crba(&r.model, &mut data, q.as_slice()).unwrap().clone().cholesky().is_some());
    check_mass_matrix(&r.model, q.as_slice()).unwrap();
    // The flag survives a rebuild (parameters applied by name rebuild the model).
    let rebuilt = stiction::ModelBuilder::from(r.model.clone()).build().unwrap();
    assert_eq!(rebuilt.nv(), 3);
    let e = parse_urdf(&xml, None, &strict).unwrap_err();
    assert!(e.to_string().contains("needs positive mass"), "{e}");
    // Coaxial hinges j1, j2 about x joined by the massless link a: M is singular.
    let xml = three_hinges(["1 0 0", "1 0 0", "0 0 1"], 0.0, 1.0);
    let e = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap_err();
    assert!(e.to_string().contains("singular") && e.to_string().contains("joint 'j2'"), "{e}");
    // A massless moving leaf: a moving subtree with no mass at all.
    let xml = arm_urdf("", "");
    let e = parse_urdf(&xml, None, &UrdfOptions::default()).unwrap_err();
    assert!(e.to_string().contains("moving subtree needs positive mass") && e.to_string().contains("'arm'"), "{e}");
}

/// A static collision mesh that is not a manifold (an edge of the cube joins a third
/// triangle, a fin) loads with its bad edge split open and a warning naming the link;
/// strict loading refuses it. The mesh still collides: a sphere on its top gets a contact.
#[test]
fn static_meshes_with_bad_edges_load_with_the_edges_split() {
    let mesh = r#"<collision><geometry><mesh filename="meshes/cube_with_fin.obj"/></geometry></collision></link>"#;
    let xml = arm_urdf(&inertial(1.0, [0.01, 0.01, 0.01]), "").replacen(
        "</inertial></link>",
        &format!("</inertial>{mesh}"),
        1,
    );
    let r = parse_urdf(&xml, Some(&fixture("")), &UrdfOptions::default()).unwrap();
    let split: Vec<&String> = r.warnings.iter().filter(|w| w.contains("split into open edges")).collect();
    assert_eq!(split.len(), 1, "{:?}", r.warnings);
    assert!(split[0].contains("link 'base'") && split[0].contains("1 of its edges"), "{split:?}");
    let cm = r.model.collision_model();
    let stiction::collision::ShapeCore::TriMesh(core) = &cm.shapes[0].core else { panic!("a static mesh") };
    // The cube's 18 edges, the fin's two new ones, and the fin's copy of the shared edge.
    assert_eq!(core.edges.len(), 21);
    assert_eq!(r.model.repairs().len(), 1);
    // A sphere of radius 0.1 resting 1 mm into the top face touches it once, normal +z.
    use stiction::collision::{narrow_phase::collide, Polytope, ShapeCore, ShapeInstance, ShapeKind};
    let sphere = ShapeInstance {
        body: Some(1),
        index_on_body: 0,
        local: SE3::identity(),
        core: ShapeCore::Convex(std::sync::Arc::new(Polytope::point())),
        radius: 0.1,
        kind: ShapeKind::Sphere,
        material: Default::default(),
        group: 1,
        mask: u32::MAX,
    };
    let at = SE3::from_translation(Vec3::new(0.1, 0.2, 0.5 + 0.1 - 1e-3));
    let mut contacts = vec![];
    collide(0, &cm.shapes[0], &cm.shapes[0].world_pose(&[SE3::identity(); 2]), 1, &sphere, &at, 1e-3, &mut contacts);
    assert_eq!(contacts.len(), 1, "{contacts:?}");
    assert_relative_eq!(contacts[0].geometry.normal, Vec3::z(), epsilon = 1e-12);
    assert_relative_eq!(contacts[0].geometry.distance, -1e-3, epsilon = 1e-12);
    let strict = UrdfOptions { strict: true, ..Default::default() };
    let e = parse_urdf(&xml, Some(&fixture("")), &strict).unwrap_err();
    assert!(e.to_string().contains("non-manifold edge"), "{e}");
}

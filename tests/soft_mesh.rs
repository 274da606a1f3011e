//! Soft-body meshes (issue #21): the box and rod generators, the boundary surface, the
//! Gmsh / VTK / TetGen loaders on hand-written fixtures (`tests/fixtures/soft/`: a unit
//! cube of six tets in regions 10 and 20, with an unused node and ignored lower-
//! dimensional cells), VTK output (`.vtu` round trip, `.pvd` series), bad input (typed
//! errors naming the file and the line or element), and a seeded fuzz of byte mutations
//! of every fixture that must never panic.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use stiction::math::{Mat3, SplitMix64, Vec3};
use stiction::soft::generate::{box_mesh, rod_mesh, vertices_where};
use stiction::soft::io::{load_msh, load_tetgen, load_vtk, parse_msh, parse_tetgen, parse_vtk, write_vtu, VtkSeries};
use stiction::soft::surface::surface;
use stiction::soft::TetMesh;
use stiction::{Error, LoadError, SoftError};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/soft").join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

fn text(name: &str) -> String {
    String::from_utf8(read(name)).unwrap()
}

/// A fresh scratch directory under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stiction_soft_mesh_{}_{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn total_volume(mesh: &TetMesh) -> f64 {
    mesh.volumes().iter().sum()
}

/// The unit cube of the fixtures: `box_mesh([1, 1, 1])` with tets 0..3 in region 10 and
/// 3..6 in region 20.
fn cube() -> TetMesh {
    let b = box_mesh([1, 1, 1], Vec3::new(1.0, 1.0, 1.0), Vec3::zeros()).unwrap();
    TetMesh::with_regions(b.vertices().to_vec(), b.tets().to_vec(), vec![10, 10, 10, 20, 20, 20]).unwrap()
}

fn assert_same_mesh(got: &TetMesh, want: &TetMesh, what: &str) {
    assert_eq!(got.vertices(), want.vertices(), "{what}: vertices");
    assert_eq!(got.tets(), want.tets(), "{what}: tets");
    assert_eq!(got.regions(), want.regions(), "{what}: regions");
}

/// The root error as a `LoadError`, panicking with the message otherwise.
fn load_error(err: &Error) -> &LoadError {
    match err.root() {
        Error::Load(e) => e,
        other => panic!("expected a LoadError, got {other:?}"),
    }
}

// ----------------------------------------------------------------------------------------
// Generators and surface

#[test]
fn box_mesh_counts_volumes_and_numbering() {
    for (cells, extent, origin) in [
        ([1, 1, 1], Vec3::new(1.0, 1.0, 1.0), Vec3::zeros()),
        ([3, 2, 4], Vec3::new(0.3, 1.7, 2.9), Vec3::new(-1.0, 0.5, 3.0)),
        ([5, 1, 2], Vec3::new(1e-3, 2e-3, 5e-4), Vec3::new(0.1, -0.2, 0.3)),
    ] {
        let [nx, ny, nz] = cells;
        let mesh = box_mesh(cells, extent, origin).unwrap();
        assert_eq!(mesh.num_vertices(), (nx + 1) * (ny + 1) * (nz + 1));
        assert_eq!(mesh.num_tets(), 6 * nx * ny * nz);
        assert_eq!(mesh.region_tags(), vec![0]);
        let want = extent.x * extent.y * extent.z;
        assert!((total_volume(&mesh) - want).abs() <= 1e-12 * want, "{cells:?}: {} vs {want}", total_volume(&mesh));
        assert!(mesh.volumes().iter().all(|&v| v > 0.0));
        let cell_volume = want / (nx * ny * nz) as f64;
        assert!(mesh.volumes().iter().all(|&v| (v - cell_volume / 6.0).abs() <= 1e-12 * cell_volume));
        for k in 0..=nz {
            for j in 0..=ny {
                for i in 0..=nx {
                    let p = mesh.vertices()[i + (nx + 1) * (j + (ny + 1) * k)];
                    let f = Vec3::new(i as f64 / nx as f64, j as f64 / ny as f64, k as f64 / nz as f64);
                    assert!((p - origin - extent.component_mul(&f)).norm() <= 1e-15 * (1.0 + origin.norm()));
                }
            }
        }
    }
}

#[test]
fn box_mesh_refuses_bad_arguments() {
    let one = Vec3::new(1.0, 1.0, 1.0);
    for (cells, extent, origin) in [
        ([0, 1, 1], one, Vec3::zeros()),
        ([1, 1, 0], one, Vec3::zeros()),
        ([1, 1, 1], Vec3::new(1.0, -1.0, 1.0), Vec3::zeros()),
        ([1, 1, 1], Vec3::new(1.0, 0.0, 1.0), Vec3::zeros()),
        ([1, 1, 1], Vec3::new(f64::NAN, 1.0, 1.0), Vec3::zeros()),
        ([1, 1, 1], Vec3::new(f64::INFINITY, 1.0, 1.0), Vec3::zeros()),
        ([1, 1, 1], one, Vec3::new(0.0, f64::NAN, 0.0)),
        ([usize::MAX, 2, 2], one, Vec3::zeros()),
    ] {
        let err = box_mesh(cells, extent, origin).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{cells:?} {extent:?}: {err}");
    }
    assert!(matches!(rod_mesh(0, 1, 1.0, 1.0), Err(Error::InvalidInput(_))));
    assert!(matches!(rod_mesh(2, 1, 1.0, -0.1), Err(Error::InvalidInput(_))));
}

#[test]
fn rod_mesh_is_a_centred_bar_along_x() {
    let (length, width) = (2.0, 0.25);
    let mesh = rod_mesh(8, 2, length, width).unwrap();
    assert_eq!(mesh.num_tets(), 6 * 8 * 2 * 2);
    let (mut lo, mut hi) = (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY));
    for p in mesh.vertices() {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    assert_eq!(lo, Vec3::new(0.0, -0.125, -0.125));
    assert_eq!(hi, Vec3::new(2.0, 0.125, 0.125));
    assert!((total_volume(&mesh) - length * width * width).abs() < 1e-14);
    let clamped = vertices_where(&mesh, |p| p.x <= 1e-12);
    assert_eq!(clamped.len(), 3 * 3);
    assert!(clamped.windows(2).all(|w| w[0] < w[1]));
    assert!(clamped.iter().all(|&v| mesh.vertices()[v].x == 0.0));
    assert_eq!(vertices_where(&mesh, |_| true).len(), mesh.num_vertices());
}

#[test]
fn box_surface_is_closed_outward_and_measures_the_box() {
    for (cells, extent, origin) in [
        ([1, 1, 1], Vec3::new(1.0, 1.0, 1.0), Vec3::zeros()),
        ([3, 2, 4], Vec3::new(0.3, 1.7, 2.9), Vec3::new(-1.0, 0.5, 3.0)),
        ([4, 4, 1], Vec3::new(2.0, 1.0, 0.1), Vec3::new(5.0, 5.0, 5.0)),
    ] {
        let [nx, ny, nz] = cells;
        let (a, b, c) = (extent.x, extent.y, extent.z);
        let mesh = box_mesh(cells, extent, origin).unwrap();
        let s = surface(&mesh);
        let x = mesh.vertices();
        assert_eq!(s.triangles.len(), 2 * 2 * (nx * ny + ny * nz + nz * nx), "{cells:?}");
        assert_eq!(s.tet_of.len(), s.triangles.len());
        let area = 2.0 * (a * b + b * c + c * a);
        assert!((s.area(x) - area).abs() <= 1e-12 * area, "area {} vs {area}", s.area(x));
        let volume = a * b * c;
        assert!((s.enclosed_volume(x) - volume).abs() <= 1e-12 * volume, "{} vs {volume}", s.enclosed_volume(x));

        // Closed and manifold: every edge in exactly two triangles, once each way.
        let mut directed: HashMap<(usize, usize), usize> = HashMap::new();
        for t in &s.triangles {
            for k in 0..3 {
                *directed.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
            }
        }
        for (&(p, q), &n) in &directed {
            assert_eq!(n, 1, "edge {p}-{q} used {n} times in the same direction");
            assert_eq!(directed.get(&(q, p)), Some(&1), "edge {p}-{q} has no opposite half");
        }

        // Outward: every normal points away from the box centre, along a face normal.
        let centre = origin + 0.5 * extent;
        for (i, t) in s.triangles.iter().enumerate() {
            let n = s.normal(i, x);
            let g = (x[t[0]] + x[t[1]] + x[t[2]]) / 3.0;
            assert!(n.dot(&(g - centre)) > 0.0, "triangle {i} points inward");
            assert!((n.abs().max() - 1.0).abs() < 1e-12, "triangle {i} is not on a box face");
            let owner = mesh.tets()[s.tet_of[i]];
            assert!(t.iter().all(|v| owner.contains(v)), "triangle {i} is not a face of its tet");
        }

        // The surface vertices are exactly those on the boundary of the box.
        let tol = 1e-9;
        let hi = origin + extent;
        let boundary =
            vertices_where(&mesh, |p| (0..3).any(|k| (p[k] - origin[k]).abs() < tol || (p[k] - hi[k]).abs() < tol));
        assert_eq!(s.vertices, boundary);
    }
}

#[test]
fn surface_order_is_deterministic_and_follows_the_deformation() {
    let mesh = box_mesh([2, 3, 2], Vec3::new(1.0, 2.0, 0.5), Vec3::zeros()).unwrap();
    assert_eq!(surface(&mesh), surface(&mesh));
    // A rotation and stretch keep the enclosed volume = det(A) · rest volume.
    let a = Mat3::new(1.2, 0.1, 0.0, -0.2, 0.9, 0.3, 0.0, 0.1, 1.1);
    let x: Vec<Vec3> = mesh.vertices().iter().map(|p| a * p + Vec3::new(3.0, -1.0, 2.0)).collect();
    let s = surface(&mesh);
    let want = a.determinant() * 1.0;
    assert!((s.enclosed_volume(&x) - want).abs() < 1e-12, "{} vs {want}", s.enclosed_volume(&x));
}

#[test]
fn affine_deformation_gives_its_matrix_on_every_tet() {
    let mut rng = SplitMix64::new(21);
    let mesh = box_mesh([3, 2, 2], Vec3::new(1.0, 0.7, 1.3), Vec3::new(0.2, -0.4, 0.1)).unwrap();
    for _ in 0..5 {
        let a = Mat3::from_fn(|i, j| if i == j { 1.0 } else { 0.0 } + rng.range(-0.5, 0.5));
        let b = Vec3::new(rng.range(-2.0, 2.0), rng.range(-2.0, 2.0), rng.range(-2.0, 2.0));
        let x: Vec<Vec3> = mesh.vertices().iter().map(|p| a * p + b).collect();
        for t in 0..mesh.num_tets() {
            let f = mesh.deformation_gradient(t, &x);
            assert!((f - a).abs().max() <= 1e-12, "tet {t}: F = {f}, A = {a}");
        }
    }
}

// ----------------------------------------------------------------------------------------
// Loaders

#[test]
fn msh_fixture_loads_the_cube() {
    let mesh = load_msh(&fixture("cube.msh")).unwrap();
    assert_same_mesh(&mesh, &cube(), "cube.msh");
    assert_eq!(mesh.region_tags(), vec![10, 20]);
    assert!((total_volume(&mesh) - 1.0).abs() < 1e-14);
}

#[test]
fn vtk_fixture_loads_the_cube() {
    let mesh = load_vtk(&fixture("cube.vtk")).unwrap();
    assert_same_mesh(&mesh, &cube(), "cube.vtk");
    assert!((total_volume(&mesh) - 1.0).abs() < 1e-14);
}

#[test]
fn tetgen_fixture_loads_the_cube() {
    let mesh = load_tetgen(&fixture("cube.node"), &fixture("cube.ele")).unwrap();
    assert_same_mesh(&mesh, &cube(), "cube.node/.ele");
    assert!((total_volume(&mesh) - 1.0).abs() < 1e-14);
}

#[test]
fn all_three_fixtures_give_the_same_mesh() {
    let msh = load_msh(&fixture("cube.msh")).unwrap();
    let vtk = load_vtk(&fixture("cube.vtk")).unwrap();
    let tetgen = load_tetgen(&fixture("cube.node"), &fixture("cube.ele")).unwrap();
    assert_eq!(msh, vtk);
    assert_eq!(msh, tetgen);
    assert_eq!(total_volume(&msh), total_volume(&vtk));
    assert_eq!(total_volume(&msh), total_volume(&tetgen));
}

#[test]
fn msh_regions_fall_back_to_entity_tags() {
    let src = text("cube.msh");
    let start = src.find("$Entities").unwrap();
    let end = src.find("$EndEntities\n").unwrap() + "$EndEntities\n".len();
    let without = format!("{}{}", &src[..start], &src[end..]);
    let mesh = parse_msh(without.as_bytes(), "no_entities.msh").unwrap();
    assert_eq!(mesh.regions(), &[1, 1, 1, 2, 2, 2]);
    // An entity without a physical group keeps its entity tag.
    let partial = src.replace("2 0 0 0 1 1 1 1 20 0", "2 0 0 0 1 1 1 0 0");
    let mesh = parse_msh(partial.as_bytes(), "partial.msh").unwrap();
    assert_eq!(mesh.regions(), &[10, 10, 10, 2, 2, 2]);
}

/// The fixture cube as a binary MSH 4.1 file, nodes stored in reverse tag order (tags
/// contiguous, so `mshio` drops them and the loader must read them itself).
fn binary_msh(little: bool) -> Vec<u8> {
    let cube = cube();
    let mut b = Vec::new();
    let sz = |b: &mut Vec<u8>, v: u64| b.extend(if little { v.to_le_bytes() } else { v.to_be_bytes() });
    let int = |b: &mut Vec<u8>, v: i32| b.extend(if little { v.to_le_bytes() } else { v.to_be_bytes() });
    let dbl = |b: &mut Vec<u8>, v: f64| b.extend(if little { v.to_le_bytes() } else { v.to_be_bytes() });
    b.extend(b"$MeshFormat\n4.1 1 8\n");
    int(&mut b, 1);
    b.extend(b"\n$EndMeshFormat\n$Nodes\n");
    for v in [1, 8, 1, 8] {
        sz(&mut b, v);
    }
    int(&mut b, 3);
    int(&mut b, 1);
    int(&mut b, 0);
    sz(&mut b, 8);
    // File position i holds vertex 7 − i with tag 8 − i.
    for i in 0..8u64 {
        sz(&mut b, 8 - i);
    }
    for i in 0..8 {
        for c in cube.vertices()[7 - i].iter() {
            dbl(&mut b, *c);
        }
    }
    b.extend(b"\n$EndNodes\n$Elements\n");
    for v in [1, 6, 1, 6] {
        sz(&mut b, v);
    }
    int(&mut b, 3);
    int(&mut b, 7);
    int(&mut b, 4);
    sz(&mut b, 6);
    for (e, t) in cube.tets().iter().enumerate() {
        sz(&mut b, e as u64 + 1);
        for &v in t {
            sz(&mut b, v as u64 + 1); // vertex v has tag v + 1
        }
    }
    b.extend(b"\n$EndElements\n");
    b
}

#[test]
fn binary_msh_with_contiguous_tags_out_of_order_loads_the_cube() {
    let cube = cube();
    for little in [true, false] {
        let mesh = parse_msh(&binary_msh(little), "cube_binary.msh").unwrap();
        assert_eq!(mesh.regions(), &[7; 6]);
        assert_eq!(mesh.num_vertices(), 8);
        // File order reversed the vertices: compare tet by tet, by position.
        for t in 0..6 {
            for a in 0..4 {
                assert_eq!(mesh.vertices()[mesh.tets()[t][a]], cube.vertices()[cube.tets()[t][a]], "tet {t}");
            }
        }
        assert!((total_volume(&mesh) - 1.0).abs() < 1e-14);
    }
}

#[test]
fn tetgen_files_in_the_other_orientation_are_flipped_as_a_whole() {
    let mesh = load_tetgen(&fixture("cube.node"), &fixture("cube_flipped.ele")).unwrap();
    assert_same_mesh(&mesh, &cube(), "cube_flipped.ele");
    // 0-based numbering, no attributes.
    let node = "4 3\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n";
    let mesh = parse_tetgen(node, "1 4\n0 0 1 2 3\n", "zero_based").unwrap();
    assert_eq!(mesh.tets(), &[[0, 1, 2, 3]]);
    assert_eq!(mesh.regions(), &[0]);
    assert!((mesh.volumes()[0] - 1.0 / 6.0).abs() < 1e-15);
}

#[test]
fn vtu_round_trip_and_series() {
    let dir = scratch("vtu");
    let cube = cube();
    let path = dir.join("cube.vtu");
    write_vtu(&path, &cube, cube.vertices(), &[], &[]).unwrap();
    assert_eq!(load_vtk(&path).unwrap(), cube);

    // A deformed rod with data: the positions read back exactly, as a new rest mesh.
    let rod = rod_mesh(6, 2, 1.5, 0.2).unwrap();
    let x: Vec<Vec3> = rod.vertices().iter().map(|p| Vec3::new(p.x * 1.1, p.y + 0.01 * p.x, p.z) / 3.0).collect();
    let stress: Vec<f64> = (0..rod.num_tets()).map(|t| 1e-7 * t as f64 - 3.3e12).collect();
    let velocity: Vec<Vec3> = x.iter().map(|p| p * 0.1).collect();
    let path = dir.join("rod.vtu");
    write_vtu(&path, &rod, &x, &[("stress", &stress)], &[("velocity", &velocity)]).unwrap();
    let back = load_vtk(&path).unwrap();
    assert_eq!(back.vertices(), &x[..]);
    assert_eq!(back.tets(), rod.tets());
    let written = std::fs::read_to_string(&path).unwrap();
    for needle in ["Name=\"stress\"", "Name=\"velocity\" NumberOfComponents=\"3\"", "Name=\"region\"", "Name=\"types\""]
    {
        assert!(written.contains(needle), "missing {needle}");
    }

    // Bad output arguments.
    let err = write_vtu(&path, &rod, &x[1..], &[], &[]).unwrap_err();
    assert!(matches!(err, Error::Dimension { what: "positions", .. }), "{err}");
    let err = write_vtu(&path, &rod, &x, &[("stress", &stress[1..])], &[]).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    let err = write_vtu(&path, &rod, &x, &[("region", &stress)], &[]).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    let mut bad = x.clone();
    bad[3].y = f64::NAN;
    assert!(matches!(write_vtu(&path, &rod, &bad, &[], &[]), Err(Error::InvalidInput(_))));

    // A series of N frames and its collection.
    let frames = 4;
    let mut series = VtkSeries::new(dir.join("series"), "rod").unwrap();
    for k in 0..frames {
        let t = 0.25 * k as f64;
        let xk: Vec<Vec3> = rod.vertices().iter().map(|p| p + Vec3::new(0.0, 0.0, -t * p.x)).collect();
        let frame = series.push(t, &rod, &xk, &[("stress", &stress)], &[]).unwrap();
        assert_eq!(frame, dir.join("series").join(format!("rod_{k:05}.vtu")));
        assert_eq!(load_vtk(&frame).unwrap().vertices(), &xk[..]);
    }
    assert_eq!(series.len(), frames);
    assert!(series.push(f64::NAN, &rod, rod.vertices(), &[], &[]).is_err());
    let pvd = series.finish().unwrap();
    assert_eq!(pvd, dir.join("series").join("rod.pvd"));
    let collection = std::fs::read_to_string(&pvd).unwrap();
    assert!(collection.contains("<VTKFile type=\"Collection\""));
    assert_eq!(collection.matches("<DataSet ").count(), frames);
    for k in 0..frames {
        let entry = format!("timestep=\"{}\" group=\"\" part=\"0\" file=\"rod_{k:05}.vtu\"", 0.25 * k as f64);
        assert!(collection.contains(&entry), "missing {entry} in\n{collection}");
    }
    assert!(VtkSeries::new(&dir, "a/b").is_err());
    assert!(VtkSeries::new(&dir, "").is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

// ----------------------------------------------------------------------------------------
// Bad input

#[test]
fn inverted_tets_in_files_are_named() {
    let cases = [
        ("cube_inverted.msh", load_msh(&fixture("cube_inverted.msh")), 4),
        ("cube_inverted.vtk", load_vtk(&fixture("cube_inverted.vtk")), 4),
        ("cube_inverted.ele", load_tetgen(&fixture("cube.node"), &fixture("cube_inverted.ele")), 1),
    ];
    for (name, result, want) in cases {
        let err = result.unwrap_err();
        match err.root() {
            Error::Soft(SoftError::InvertedTet { tet, volume, .. }) => {
                assert_eq!(*tet, want, "{name}");
                assert!(*volume < 0.0);
            }
            other => panic!("{name}: expected InvertedTet, got {other}"),
        }
    }
}

#[test]
fn out_of_range_indices_are_refused() {
    let err = load_tetgen(&fixture("cube.node"), &fixture("cube_out_of_range.ele")).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(load_error(&err), LoadError::Malformed { .. }), "{msg}");
    assert!(msg.contains("cube_out_of_range.ele") && msg.contains("line 8") && msg.contains("node 12"), "{msg}");

    let msh = text("cube.msh").replace("6 1 7 5 8", "6 1 7 5 42");
    let err = parse_msh(msh.as_bytes(), "range.msh").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(load_error(&err), LoadError::Malformed { .. }), "{msg}");
    assert!(msg.contains("range.msh") && msg.contains("element 6") && msg.contains("node 42"), "{msg}");

    let vtk = text("cube.vtk").replace("4 0 6 4 7", "4 0 6 4 17");
    let err = parse_vtk(vtk.as_bytes(), "range.vtk").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(load_error(&err), LoadError::Malformed { .. }), "{msg}");
    assert!(msg.contains("range.vtk") && msg.contains("cell 5") && msg.contains("point 17"), "{msg}");
}

#[test]
fn non_numeric_tokens_name_the_file_and_line() {
    let err = load_tetgen(&fixture("cube_bad_number.node"), &fixture("cube.ele")).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(load_error(&err), LoadError::Malformed { .. }), "{msg}");
    assert!(msg.contains("cube_bad_number.node") && msg.contains("line 5") && msg.contains("'abc'"), "{msg}");

    let msh = text("cube.msh").replace("\n1 1 0\n", "\n1 x 0\n");
    let err = parse_msh(msh.as_bytes(), "word.msh").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(load_error(&err), LoadError::Malformed { .. }), "{msg}");
    assert!(msg.contains("word.msh") && msg.contains("line "), "{msg}");

    let vtk = text("cube.vtk").replace("\n1 1 0\n", "\n1 one 0\n");
    let err = parse_vtk(vtk.as_bytes(), "word.vtk").unwrap_err();
    assert!(matches!(load_error(&err), LoadError::Malformed { .. }), "{err}");
    assert!(err.to_string().contains("word.vtk"), "{err}");

    let vtu_dir = scratch("word_vtu");
    let path = vtu_dir.join("cube.vtu");
    write_vtu(&path, &cube(), cube().vertices(), &[], &[]).unwrap();
    let vtu = std::fs::read_to_string(&path).unwrap().replacen(" 1e0 ", " one ", 1).replacen(" 1 ", " one ", 1);
    let err = parse_vtk(vtu.as_bytes(), "word.vtu").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(load_error(&err), LoadError::Malformed { .. }), "{msg}");
    assert!(msg.contains("word.vtu") && msg.contains("line "), "{msg}");
    let _ = std::fs::remove_dir_all(&vtu_dir);
}

#[test]
fn truncated_files_are_refused() {
    for name in ["cube.msh", "cube.vtk"] {
        let bytes = read(name);
        for cut in [0, 10, bytes.len() / 3, bytes.len() / 2, 2 * bytes.len() / 3, bytes.len() - 30] {
            let r =
                if name.ends_with(".msh") { parse_msh(&bytes[..cut], name) } else { parse_vtk(&bytes[..cut], name) };
            let err = r.expect_err(&format!("{name} cut at {cut} loaded"));
            assert!(err.to_string().contains(name), "{name} cut at {cut}: {err}");
        }
    }
    let (node, ele) = (text("cube.node"), text("cube.ele"));
    for cut in [0, node.len() / 2, node.len() - 30] {
        let err = parse_tetgen(&node[..cut], &ele, "cut").unwrap_err();
        assert!(err.to_string().contains("cut.node"), "{err}");
    }
    for cut in [0, ele.len() / 2, ele.len() - 20] {
        let err = parse_tetgen(&node, &ele[..cut], "cut").unwrap_err();
        assert!(err.to_string().contains("cut.ele"), "{err}");
    }
}

#[test]
fn second_order_and_other_volume_cells_are_unsupported() {
    let err = load_msh(&fixture("tet10.msh")).unwrap_err();
    assert!(matches!(load_error(&err), LoadError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("tet10.msh") && err.to_string().contains("element type 11"), "{err}");

    let node = "4 3\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n";
    let err = parse_tetgen(node, &text("tet10.ele"), "quadratic").unwrap_err();
    assert!(matches!(load_error(&err), LoadError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("quadratic.ele"), "{err}");

    // A hexahedron (VTK type 12) among the tets.
    let vtk = text("cube.vtk")
        .replace("CELLS 8 36", "CELLS 8 41")
        .replace("3 0 1 3\n", "8 0 1 3 2 4 5 7 6\n")
        .replace("\n5\n1\nCELL_DATA", "\n12\n1\nCELL_DATA");
    let err = parse_vtk(vtk.as_bytes(), "hex.vtk").unwrap_err();
    assert!(matches!(load_error(&err), LoadError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("hex.vtk") && err.to_string().contains("cell 6"), "{err}");

    // Another MSH version.
    let old = text("cube.msh").replace("4.1 0 8", "2.2 0 8");
    let err = parse_msh(old.as_bytes(), "old.msh").unwrap_err();
    assert!(matches!(load_error(&err), LoadError::Unsupported { .. }), "{err}");
}

#[test]
fn missing_files_are_io_errors() {
    let err = load_msh(&fixture("no_such.msh")).unwrap_err();
    assert!(matches!(load_error(&err), LoadError::Io { path, .. } if path.ends_with("no_such.msh")), "{err}");
    let err = load_vtk(&fixture("no_such.vtk")).unwrap_err();
    assert!(matches!(load_error(&err), LoadError::Io { .. }), "{err}");
    let err = load_tetgen(&fixture("cube.node"), &fixture("no_such.ele")).unwrap_err();
    assert!(matches!(load_error(&err), LoadError::Io { path, .. } if path.ends_with("no_such.ele")), "{err}");
}

// ----------------------------------------------------------------------------------------
// Fuzz

const CASES: usize = 200;
const SEED: u64 = 20261201;

fn pick<T: Copy>(rng: &mut SplitMix64, xs: &[T]) -> Option<T> {
    (!xs.is_empty()).then(|| xs[(rng.next_u64() % xs.len() as u64) as usize])
}

/// One seeded byte-level mutation of `src`, and what it did.
fn mutate(src: &[u8], rng: &mut SplitMix64) -> (Vec<u8>, String) {
    let mut s = src.to_vec();
    let n = s.len().max(1) as u64;
    let at = (rng.next_u64() % n) as usize;
    let line_starts: Vec<usize> =
        std::iter::once(0).chain(src.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1)).collect();
    // Byte ranges of numbers.
    let mut numbers = vec![];
    let mut i = 0;
    while i < src.len() {
        if src[i].is_ascii_digit() {
            let start = i;
            while i < src.len() && (src[i].is_ascii_digit() || src[i] == b'.' || src[i] == b'e' || src[i] == b'-') {
                i += 1;
            }
            numbers.push((start, i));
        } else {
            i += 1;
        }
    }
    let what = match rng.next_u64() % 8 {
        0 => {
            let b = (rng.next_u64() % 256) as u8;
            if at < s.len() {
                s[at] = b;
            }
            format!("byte {at} -> {b:#04x}")
        }
        1 => {
            let len = 1 + (rng.next_u64() % 16) as usize;
            let end = (at + len).min(s.len());
            s.drain(at.min(end)..end);
            format!("deleted bytes {at}..{end}")
        }
        2 => {
            s.truncate(at);
            format!("truncated at {at}")
        }
        3 | 4 => {
            let words = [
                "0",
                "-1",
                "1",
                "3",
                "11",
                "4294967295",
                "4294967296",
                "18446744073709551615",
                "99999999999999999999999",
                "1431655765",
                "nan",
                "inf",
                "-inf",
                "1e308",
                "abc",
                "",
                "2.5",
            ];
            match (pick(rng, &numbers), pick(rng, &words)) {
                (Some((a, b)), Some(w)) => {
                    let out = format!("number '{}' -> '{w}'", String::from_utf8_lossy(&s[a..b]));
                    s.splice(a..b, w.bytes());
                    out
                }
                _ => "nothing".into(),
            }
        }
        5 => match pick(rng, &line_starts) {
            Some(a) => {
                let end = src[a..].iter().position(|&b| b == b'\n').map_or(src.len(), |k| a + k + 1);
                s.drain(a..end);
                format!("deleted line at byte {a}")
            }
            None => "nothing".into(),
        },
        6 => match pick(rng, &line_starts) {
            Some(a) => {
                let end = src[a..].iter().position(|&b| b == b'\n').map_or(src.len(), |k| a + k + 1);
                let line = src[a..end].to_vec();
                s.splice(a..a, line);
                format!("duplicated line at byte {a}")
            }
            None => "nothing".into(),
        },
        _ => {
            let k = 1 + (rng.next_u64() % 8) as usize;
            let junk: Vec<u8> = (0..k).map(|_| (rng.next_u64() % 256) as u8).collect();
            let at = at.min(s.len());
            s.splice(at..at, junk);
            format!("inserted {k} random bytes at {at}")
        }
    };
    (s, what)
}

/// Runs `load` on `CASES` mutations of `src`: never a panic; a `LoadError` names the file.
fn fuzz(label: &str, src: &[u8], name: &str, load: &dyn Fn(&[u8]) -> stiction::Result<TetMesh>) {
    let mut rng = SplitMix64::new(SEED ^ label.len() as u64 ^ src.len() as u64);
    let (mut loaded, mut refused, mut panics) = (0, 0, vec![]);
    for case in 0..CASES {
        let (bytes, what) = mutate(src, &mut rng);
        let outcome = catch_unwind(AssertUnwindSafe(|| match load(&bytes) {
            Ok(mesh) => {
                assert!(mesh.volumes().iter().all(|&v| v > 0.0));
                true
            }
            Err(e) => {
                if let Error::Load(_) = e.root() {
                    assert!(e.to_string().contains(name), "{label} case {case} ({what}): {e}");
                }
                false
            }
        }));
        match outcome {
            Ok(true) => loaded += 1,
            Ok(false) => refused += 1,
            Err(_) => panics.push(format!("case {case}: {what}")),
        }
    }
    eprintln!("{label}: {loaded} loaded, {refused} refused, {} panics of {CASES}", panics.len());
    assert!(panics.is_empty(), "{label}: {} panics:\n{}", panics.len(), panics.join("\n"));
    assert!(refused > 0, "{label}: no mutation was refused");
}

#[test]
fn fuzzed_fixtures_never_panic() {
    fuzz("msh", &read("cube.msh"), "fuzz.msh", &|b| parse_msh(b, "fuzz.msh"));
    fuzz("binary msh", &binary_msh(true), "fuzz.msh", &|b| parse_msh(b, "fuzz.msh"));
    fuzz("vtk", &read("cube.vtk"), "fuzz.vtk", &|b| parse_vtk(b, "fuzz.vtk"));
    let dir = scratch("fuzz_vtu");
    let path = dir.join("cube.vtu");
    write_vtu(&path, &cube(), cube().vertices(), &[], &[]).unwrap();
    fuzz("vtu", &std::fs::read(&path).unwrap(), "fuzz.vtu", &|b| parse_vtk(b, "fuzz.vtu"));
    let _ = std::fs::remove_dir_all(&dir);
    let (node, ele) = (text("cube.node"), text("cube.ele"));
    fuzz("node", node.as_bytes(), "fuzz", &|b| parse_tetgen(&String::from_utf8_lossy(b), &ele, "fuzz"));
    fuzz("ele", ele.as_bytes(), "fuzz", &|b| parse_tetgen(&node, &String::from_utf8_lossy(b), "fuzz"));
}

/// Every mesh defect `TetMesh::new` refuses, with the element or vertex named.
#[test]
fn mesh_validation_names_the_bad_element_or_vertex() {
    let unit = vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
    let err = |v: Vec<Vec3>, t: Vec<[usize; 4]>| TetMesh::new(v, t).unwrap_err().root().clone();
    assert!(TetMesh::new(unit.clone(), vec![[0, 1, 2, 3]]).is_ok());
    assert_eq!(err(unit.clone(), vec![]), Error::Soft(SoftError::Empty));
    let mut nan = unit.clone();
    nan[2].y = f64::NAN;
    assert!(matches!(err(nan, vec![[0, 1, 2, 3]]), Error::Soft(SoftError::NonFiniteVertex { vertex: 2, .. })));
    assert!(matches!(
        err(unit.clone(), vec![[0, 1, 2, 3], [0, 1, 2, 7]]),
        Error::Soft(SoftError::VertexOutOfRange { tet: 1, vertex: 7, vertices: 4 })
    ));
    assert!(matches!(
        err(unit.clone(), vec![[0, 1, 1, 3]]),
        Error::Soft(SoftError::RepeatedVertex { tet: 0, vertex: 1 })
    ));
    assert!(matches!(
        err(unit.clone(), vec![[0, 2, 1, 3]]),
        Error::Soft(SoftError::InvertedTet { tet: 0, vertices: [0, 2, 1, 3], .. })
    ));
    let mut flat = unit.clone();
    flat[3] = Vec3::new(0.3, 0.3, 1e-12);
    assert!(matches!(err(flat, vec![[0, 1, 2, 3]]), Error::Soft(SoftError::DegenerateTet { tet: 0, .. })));
    let mut extra = unit.clone();
    extra.push(Vec3::new(5.0, 5.0, 5.0));
    assert!(matches!(err(extra, vec![[0, 1, 2, 3]]), Error::Soft(SoftError::UnusedVertex { vertex: 4 })));
    // Two tets sharing a face through two copies of the same vertex.
    let mut dup = unit.clone();
    dup.extend([Vec3::new(1.0, 1.0, 1.0), Vec3::x()]);
    assert!(matches!(
        err(dup, vec![[0, 1, 2, 3], [5, 4, 2, 3]]),
        Error::Soft(SoftError::DuplicateVertex { first: 1, second: 5, .. })
    ));
    let regions = TetMesh::with_regions(unit, vec![[0, 1, 2, 3]], vec![1, 2]).unwrap_err();
    assert!(matches!(regions.root(), Error::Dimension { what: "tet regions", .. }));
}

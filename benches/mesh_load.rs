//! Criterion bench of loading a robot whose moving link carries a 200k-triangle binary STL
//! collision mesh (issue #16: "loads in < 1 s"). The mesh is a UV sphere of 316 × 320
//! quads (202,240 triangles, every vertex on its convex hull: the hull's worst case),
//! written to a temporary directory; the load reads the STL, welds its vertices and
//! builds the convex hull of the moving link's mesh. Run:
//! `cargo bench --bench mesh_load -- --noplot`; the figure is in docs/benchmarks.md.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use stiction::io::{load_urdf, UrdfOptions};

/// Writes the sphere STL and a one-joint URDF that uses it; returns the URDF's path.
fn write_robot() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stiction_mesh_load_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (nu, nv) = (320usize, 316usize);
    let point = |i: usize, j: usize| {
        let (th, ph) = (std::f64::consts::PI * i as f64 / nv as f64, std::f64::consts::TAU * j as f64 / nu as f64);
        [0.1 * th.sin() * ph.cos(), 0.1 * th.sin() * ph.sin(), 0.1 * th.cos()].map(|x| x as f32)
    };
    let mut body = Vec::new();
    let mut count = 0u32;
    for i in 0..nv {
        for j in 0..nu {
            let (a, b, c, d) = (point(i, j), point(i + 1, j), point(i + 1, j + 1), point(i, j + 1));
            for t in [[a, b, c], [a, c, d]] {
                body.extend_from_slice(&[0u8; 12]);
                for v in t {
                    for x in v {
                        body.extend_from_slice(&x.to_le_bytes());
                    }
                }
                body.extend_from_slice(&[0u8; 2]);
                count += 1;
            }
        }
    }
    let mut f = std::fs::File::create(dir.join("sphere.stl")).unwrap();
    f.write_all(&[0u8; 80]).unwrap();
    f.write_all(&count.to_le_bytes()).unwrap();
    f.write_all(&body).unwrap();
    let inertial =
        r#"<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>"#;
    let urdf = format!(
        r#"<robot name="big_mesh">
  <link name="base">{inertial}</link>
  <link name="ball">{inertial}<collision><geometry><mesh filename="sphere.stl"/></geometry></collision></link>
  <joint name="spin" type="continuous"><parent link="base"/><child link="ball"/><axis xyz="0 0 1"/></joint>
</robot>"#
    );
    let path = dir.join("robot.urdf");
    std::fs::write(&path, urdf).unwrap();
    path
}

fn bench(c: &mut Criterion) {
    let path = write_robot();
    let options = UrdfOptions::default();
    let mut group = c.benchmark_group("mesh_load");
    group.sample_size(10).measurement_time(Duration::from_secs(15));
    group.bench_function("urdf_200k_triangle_stl_on_a_moving_link", |b| {
        b.iter(|| black_box(load_urdf(black_box(&path), &options).unwrap()))
    });
    group.finish();
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

criterion_group!(benches, bench);
criterion_main!(benches);

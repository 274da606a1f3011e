"""The package imports without torch and JAX; the framework modules say what is missing."""

import subprocess
import sys
import textwrap


def run_without(blocked, body):
    """Runs ``body`` in a fresh interpreter where importing any of ``blocked`` fails."""
    code = textwrap.dedent(f"""
        import sys
        for name in {blocked!r}:
            sys.modules[name] = None  # makes `import name` raise ImportError
        {body}
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_package_imports_without_torch_and_jax():
    r = run_without(["torch", "jax"], textwrap.indent(textwrap.dedent("""
        import stiction, stiction.trajopt, stiction.sysid
        assert "torch" not in stiction.__dict__ and "jax" not in stiction.__dict__
        print("ok")
    """), " " * 8).strip())
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_framework_modules_raise_import_error_naming_the_package():
    for name in ["torch", "jax"]:
        r = run_without([name], f"import stiction.{name}")
        assert r.returncode != 0
        assert "ImportError" in r.stderr or "ModuleNotFoundError" in r.stderr, r.stderr
        assert f"stiction.{name} needs" in r.stderr and f"pip install {name}" in r.stderr, r.stderr


def test_package_imports_without_ray_and_distributed_names_it():
    r = run_without(["ray"], textwrap.indent(textwrap.dedent("""
        import stiction, stiction.sysid
        assert "distributed" not in stiction.__dict__
        try:
            import stiction.distributed
        except ImportError as e:
            print("ImportError:", e)
    """), " " * 8).strip())
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ImportError: stiction.distributed needs Ray"), r.stdout
    assert "pip install ray" in r.stdout and 'pip install "stiction[ray]"' in r.stdout, r.stdout

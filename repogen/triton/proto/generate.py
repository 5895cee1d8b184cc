"""Regenerate ``model_config_pb2.py``/``.pyi`` and ``onnx_graph_pb2.py``/``.pyi`` from ``proto/``.

Usage: ``python -m repogen.triton.proto.generate [--out DIR] [--proto-dir DIR]`` (what ``make proto`` runs).
The output depends on the grpcio-tools version, so generate with the pinned one.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROTO_DIR = PACKAGE_DIR.parents[2] / "proto"
PROTO_FILES = ("model_config.proto", "onnx_graph.proto")
GENERATED_FILES = tuple(f"{Path(p).stem}_pb2{ext}" for p in PROTO_FILES for ext in (".py", ".pyi"))


def generate(out_dir: Path = PACKAGE_DIR, proto_dir: Path = PROTO_DIR) -> list[Path]:
    """Run protoc (from grpcio-tools) on the schemas; return the paths of the generated files."""
    from grpc_tools import protoc  # build-time dependency, imported lazily

    proto_paths = [proto_dir / name for name in PROTO_FILES]
    for proto_path in proto_paths:
        if not proto_path.is_file():
            raise FileNotFoundError(f"schema not found: {proto_path}")
    out_dir.mkdir(parents=True, exist_ok=True)
    # Compiled from the schema's parent so that it registers as "proto/model_config.proto", not
    # "model_config.proto": tritonclient registers a file of that name in the same default pool.
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "grpc_tools.protoc",
            f"-I{proto_dir.parent}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            *(str(p) for p in proto_paths),
        ]
        rc = protoc.main(args)
        if rc != 0:
            raise RuntimeError(f"protoc failed with exit status {rc}: {' '.join(args[1:])}")
        for name in GENERATED_FILES:
            shutil.move(str(Path(tmp) / proto_dir.name / name), out_dir / name)
    return [out_dir / name for name in GENERATED_FILES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m repogen.triton.proto.generate", description=__doc__)
    parser.add_argument("--out", type=Path, default=PACKAGE_DIR, help="output directory (default: %(default)s)")
    parser.add_argument("--proto-dir", type=Path, default=PROTO_DIR, help="directory holding the .proto files")
    ns = parser.parse_args(argv)
    try:
        paths = generate(ns.out, ns.proto_dir)
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`make demo`: build the quickstart, serve it on the embedded stock tritonserver, ask it twice.

The server is the unmodified tritonserver 2.51 binary from PyPI's nvidia-pytriton wheel,
running models from a virtualenv that holds numpy and nothing else, of NGC 24.10's Python (3.10)
when it is installed: the pairing the stock container runs. Without it, this Python serves.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from repogen import build_app
from repogen.server import TritonServer, ensure_server, ensure_server_venv, get_release
from repogen.server.provision.pythons import container_python_or_current
from repogen.testing.client import infer
from repogen.triton.releases import pairing_label

HERE = Path(__file__).resolve().parent


def main() -> int:
    output = HERE.parents[1] / "build" / "quickstart"
    result = build_app(f"{HERE / 'app.py'}:models", output)
    print(f"built {[m.name for m in result.spec.models]} into {output}")

    release = get_release("2.51.0")
    python, python_version, note = container_python_or_current(release)
    if note:
        print(note)
    label = pairing_label(release, python_version)
    print(f"preparing {label} with a numpy-only server venv (first run downloads ~55 MB)")
    install = ensure_server(release)
    venv = ensure_server_venv(python=python, numpy=release.numpy)
    with TritonServer(output, install, venv) as server:
        print(f"tritonserver ready: HTTP {server.http_url}, gRPC {server.grpc_url} (pid {server.pid})")
        a = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
        b = np.array([[0.5, 0.5, 0.5]], dtype=np.float32)
        out = infer("http", server, "AddSub", {"a": a, "b": b})
        print(f"HTTP  AddSub(a={a.tolist()}, b={b.tolist()}) -> add={out['add'].tolist()} sub={out['sub'].tolist()}")
        text = np.array([[b"hello triton"]], dtype=object)
        out = infer("grpc", server, "Shout", {"text": text})
        print(f"gRPC  Shout(text={text.tolist()}) -> loud={out['loud'].tolist()} length={out['length'].tolist()}")
        ok = out["loud"][0, 0] == b"HELLO TRITON!"
    print("server stopped")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

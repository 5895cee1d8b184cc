"""The NVIDIA GPUs a tritonserver started on this machine would see, and what a repository asks of them.

A model whose instance groups are ``KIND_GPU`` fails to load where the server sees too few GPUs (Triton
refuses a group naming a GPU id it does not have, and a GPU group with none to run on); saying so before a
server starts, or when a repository is checked, beats that log line. ``nvidia-smi -L`` lists the GPUs the
driver exposes to this process (a container's too, with the NVIDIA container toolkit).
"""

from __future__ import annotations

import shutil
import subprocess

from ..runtime.contract.tritonserver_flags import CUDA_POOL_DEFAULT, POOL_FLAG  # the runtime reads it too

__all__ = ["CUDA_POOL_DEFAULT", "GpuQueryError", "cuda_pool_args", "gpu_shortfall", "visible_gpus"]

CUDA_POOL_HEADROOM = 2  # a batch in flight while the next one is read in
CUDA_POOL_STEP = 64 << 20


class GpuQueryError(RuntimeError):
    """nvidia-smi is installed but could not say which GPUs there are: a broken driver, not a machine without GPUs."""


#: How long ``nvidia-smi -L`` may take: it answers in well under a second, but a driver loading on first use on a
#: loaded machine is slow. Past it the driver is hung, which is an error, not an answer.
NVIDIA_SMI_TIMEOUT_S = 60


def visible_gpus() -> list[str]:
    """One line per GPU as ``nvidia-smi -L`` lists it (``GPU 0: NVIDIA H100 ...``).

    None where there is no nvidia-smi or it says "No devices were found". An nvidia-smi that fails otherwise or
    hangs raises :class:`GpuQueryError`: read as "no GPU", a broken driver on a GPU machine would skip or refuse
    GPU work without saying why.
    """
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise GpuQueryError(
            f"`{smi} -L` did not answer in {NVIDIA_SMI_TIMEOUT_S} s: the NVIDIA driver is hung; check `nvidia-smi` "
            "and the driver (dmesg) before running GPU work here"
        ) from exc
    except OSError as exc:
        raise GpuQueryError(f"`{smi} -L` could not run ({exc}): fix or remove that nvidia-smi") from exc
    output = f"{done.stdout}\n{done.stderr}"
    if "No devices were found" in output:
        return []
    if done.returncode != 0:
        said = (output.strip().splitlines() or ["no output"])[-1]
        raise GpuQueryError(
            f"`{smi} -L` failed (exit {done.returncode}: {said}): the NVIDIA driver does not answer, so which GPUs "
            "this machine has is unknown; fix the driver (`nvidia-smi` must list the GPUs) or run without it on PATH"
        )
    return [line.strip() for line in done.stdout.splitlines() if line.startswith("GPU ")]


def cuda_pool_args(batch_bytes: int, gpus: int) -> list[str]:
    """``--cuda-memory-pool-byte-size`` for each of ``gpus`` GPUs where ``batch_bytes`` (every GPU model's full
    batches, inputs and outputs) twice over outgrows the default pool; none where the default holds them."""
    needed = batch_bytes * CUDA_POOL_HEADROOM
    if gpus <= 0 or needed <= CUDA_POOL_DEFAULT:
        return []
    size = -(-needed // CUDA_POOL_STEP) * CUDA_POOL_STEP
    return [f"{POOL_FLAG}={gpu}:{size}" for gpu in range(gpus)]


def gpu_shortfall(model: str, needed: int, groups: list[str], visible: int) -> str | None:
    """Why ``model`` (its KIND_GPU ``groups``, needing ``needed`` GPUs) cannot load beside ``visible`` GPUs, or None."""
    if needed <= visible:
        return None
    have = f"{visible} NVIDIA GPU{'s' if visible != 1 else ''}" if visible else "no NVIDIA GPU (nvidia-smi lists none)"
    return (
        f"model '{model}' runs KIND_GPU instances ({', '.join(groups)}) and needs {needed} GPU"
        f"{'s' if needed != 1 else ''}, but this machine has {have}: a tritonserver here fails to load it. Serve it "
        "where there are (a container with `docker run --gpus all`; `repogen deploy` asks for them), or give it "
        'instance_groups=[InstanceGroup(kind="KIND_CPU")] to run on the CPU'
    )

"""The footprint of each notebook's kernel (issue #41.4): peak resident memory, peak address space and CPU-seconds
of a kernel running the notebook top to bottom with the solutions filled in (notebooks/NN_topic.ipynb, the way a
student ends), as a student's server runs it: the hub's kernel spec (deploy/jupyter, under its memory ceiling) with
the hub's OMP_NUM_THREADS. Peaks are the kernel's own (/proc's VmHWM and VmPeak at the end); CPU-seconds are the
kernel's user + system time, its children included. It then prints docs/jupyterhub.md's sizing table, computed
from these rows (``sizing``).

    .venv/bin/python benchmarks/bench_notebook_footprint.py [00_welcome.ipynb ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KERNELS = ROOT / "deploy" / "jupyter" / "kernels"
# the targets: peak resident memory of one notebook's kernel
TARGET_MIB = {"10_train_gpt.ipynb": 2048}
DEFAULT_TARGET_MIB = 1024
CELL_SECONDS = 1800  # nbclient's limit for one cell, generous for a loaded machine


@dataclass
class Footprint:
    notebook: str
    peak_rss_mib: float  # VmHWM: the most resident memory the kernel ever held
    peak_vm_mib: float  # VmPeak: the most address space it ever mapped (what the kernel's ceiling counts)
    cpu_s: float
    wall_s: float
    target_mib: int

    @property
    def within_target(self) -> bool:
        return self.peak_rss_mib <= self.target_mib


def hub_kernel_env() -> dict[str, str]:
    """The environment a student's kernel gets from deploy/jupyterhub_config.py (thread count, memory ceiling)."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("jupyterhub_config.py", str(ROOT / "deploy")).load_config()
    spawner_env = config.Spawner.environment
    return {name: spawner_env[name] for name in ("OMP_NUM_THREADS", "COURSE_KERNEL_MEMORY_MB")}


def _status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"/proc/{pid}/status has no {field}")


def measure(name: str) -> Footprint:
    """Run notebooks/``name`` in a fresh kernel from the hub's kernel spec; its footprint."""
    import nbformat
    import psutil
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    source = NOTEBOOKS / name
    if Path(name).name != name or source.suffix != ".ipynb" or not source.is_file():
        raise ValueError(f"notebook must name a notebook file in {NOTEBOOKS}, got {name!r}")
    work = Path(tempfile.mkdtemp(prefix="footprint-"))
    try:
        shutil.copy(source, work / name)
        notebook = nbformat.read(work / name, as_version=4)
        manager = KernelManager(kernel_name="python3",
                                kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(KERNELS)]))
        env = {**os.environ, **hub_kernel_env(), "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
        client = NotebookClient(notebook, km=manager, timeout=CELL_SECONDS, allow_errors=False,
                                resources={"metadata": {"path": str(work)}})
        started = time.monotonic()
        with client.setup_kernel(env=env, cwd=str(work)):
            for index, cell in enumerate(notebook.cells):
                client.execute_cell(cell, index)
            pid = manager.provisioner.pid
            times = psutil.Process(pid).cpu_times()
            rss, vm = _status_mib(pid, "VmHWM"), _status_mib(pid, "VmPeak")
        wall = time.monotonic() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cpu = times.user + times.system + times.children_user + times.children_system
    return Footprint(name, round(rss), round(vm), round(cpu, 1), round(wall, 1),
                     TARGET_MIB.get(name, DEFAULT_TARGET_MIB))


def sizing(rows: list[Footprint], server_mib: float, hub_mib: float, node_gib: int = 64, node_cores: int = 16,
           reserved_gib: int = 4, window_s: int = 600) -> list[str]:
    """docs/jupyterhub.md's sizing table from the footprints: per notebook, a student's memory (their server +
    that notebook's kernel at its peak, RSS: shared libraries counted in each, so an upper bound), students per
    node by memory (the node less ``reserved_gib`` for the system and the hub) and by CPU (everyone runs the
    notebook once within ``window_s`` seconds), and the memory a class of 100 and 500 needs (plus the hub)."""
    lines = [f"| notebook | per student MiB | per {node_cores}-core / {node_gib} GB node: by memory | by CPU "
             f"(all run it within {window_s // 60} min) | students per node | class of 100, GiB | class of 500, GiB |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        student = server_mib + row.peak_rss_mib
        by_memory = int((node_gib - reserved_gib) * 1024 // student)
        by_cpu = int(node_cores * window_s // row.cpu_s)
        class_gb = [(n * student + hub_mib) / 1024 for n in (100, 500)]
        lines.append(f"| {row.notebook} | {student:.0f} | {by_memory} | {by_cpu} | {min(by_memory, by_cpu)} | "
                     f"{class_gb[0]:.0f} | {class_gb[1]:.0f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")))
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--server-mib", type=float, default=142.0,
                        help="a student's server without kernels, RSS (RESULTS_hub.md: 434 MiB a student after 00, "
                             "less 00's kernel peak of 292 MiB)")
    parser.add_argument("--hub-mib", type=float, default=191.0,
                        help="the hub's own processes at their peak (benchmarks/RESULTS_hub.md)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}; kernel env: {hub_kernel_env()}", flush=True)
    print("| notebook | peak RSS MiB | peak address space MiB | CPU-s | wall s | target MiB |")
    print("|---|---|---|---|---|---|")
    rows = []
    for name in args.notebooks:
        row = measure(name)
        rows.append(row)
        print(f"| {row.notebook} | {row.peak_rss_mib:.0f} | {row.peak_vm_mib:.0f} | {row.cpu_s} | {row.wall_s} | "
              f"{row.target_mib}{'' if row.within_target else ' EXCEEDED'} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}\n")
    print("\n".join(sizing(rows, args.server_mib, args.hub_mib)))
    if args.json:
        args.json.write_text(json.dumps([asdict(row) for row in rows], indent=1))


if __name__ == "__main__":
    main()

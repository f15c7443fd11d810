"""The course's Python kernel with a memory ceiling (deploy/jupyterhub_config.py puts it first on JUPYTER_PATH,
so it replaces ipykernel's own "python3" spec; docs/jupyterhub.md, "Memory limits").

Before ipykernel starts, the kernel's address space is capped at COURSE_KERNEL_MEMORY_MB MiB (RLIMIT_AS; unset
or 0: no cap). An allocation past it fails inside the cell that asked for it (numpy's MemoryError, torch's
"can't allocate memory") instead of the kernel being killed: the cell shows the error followed by a note saying
that the memory limit was reached and what to do, the kernel and every variable stay, and the notebook is not
touched. Other errors show as usual.
Left out: a ceiling for all of one student's kernels together (systemdspawner's MemoryMax or the pod's limit).
"""

import os
import resource
import sys

LIMIT_MB = int(os.environ.get("COURSE_KERNEL_MEMORY_MB") or 0)
NOTE = ("\nOut of memory: this kernel may use at most {limit} MiB (the course's limit per notebook), and the line "
        "above asked for more. The kernel is still running and your notebook is unchanged: free memory (del large "
        "tensors, use a smaller batch or model) and run the cell again, or restart the kernel (Kernel > Restart).")


# what the course's libraries say when the address space is full: torch's allocator, the C library (errno 12),
# the loader mapping a library (an import), besides Python's and numpy's MemoryError
SIGNS = ("can't allocate memory", "cannot allocate memory", "failed to map segment")


def _is_out_of_memory(error: BaseException) -> bool:
    return isinstance(error, MemoryError) or any(sign in str(error).lower() for sign in SIGNS)


def _show_with_note(shell, etype, value, tb, tb_offset=None):
    """IPython's custom exception handler: the usual traceback, then the note when memory ran out."""
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    if _is_out_of_memory(value):
        print(NOTE.format(limit=LIMIT_MB), file=sys.stderr)


def main() -> None:
    if LIMIT_MB > 0:
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT_MB * 2**20, LIMIT_MB * 2**20))
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(sys.argv[1:])
    if LIMIT_MB > 0:
        app.shell.set_custom_exc((MemoryError, RuntimeError, OSError, ImportError), _show_with_note)
    app.start()


if __name__ == "__main__":
    main()

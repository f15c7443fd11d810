"""The seccomp filter that keeps a kernel run by root from making a user namespace of its own.

A grader run by root starts bwrap without a user namespace (``bwrap.py``), so bwrap's own
``--disable-userns``, which needs ``--unshare-user``, is not available; this filter does its work. It
is built with libseccomp (the system's ``libseccomp.so.2``, through the ``pyseccomp`` binding),
compiled to a BPF program by ``bpf_program()``, and handed to bwrap (``--seccomp FD``), which installs
it just before it starts the program inside. The policy, for the machine's own architecture:

    clone, unshare with CLONE_NEWUSER in their flags       -> EPERM
    clone3 (its flags lie in memory a filter cannot read)  -> ENOSYS: the C library falls back to clone
    any other syscall ABI (i386 or x32 on x86_64, arm on
    aarch64), on which those calls would go unchecked      -> EPERM (libseccomp's bad-architecture action)
    everything else                                        -> allowed

``policy_problem()`` says why the filter cannot be built here (no libseccomp, or one too old to know
``clone3``), or ``None``. ``describe(arch)`` gives libseccomp's own readable listing of the filter
(PFC), for any architecture it knows, so a test reads the policy for aarch64 on an x86_64 machine.

Leaves out: the mounts, namespaces and the uid drop (``bwrap.py``).
"""

from __future__ import annotations

import errno
import tempfile

CLONE_NEWUSER = 0x10000000
DENIED = ("clone", "unshare", "clone3")  # what the filter decides on; every other syscall is allowed
INSTALL = "install libseccomp (Debian/Ubuntu: apt-get install libseccomp2; Fedora: dnf install libseccomp)"


def _binding():
    """The ``pyseccomp`` module, or ``RuntimeError`` saying what to install."""
    try:
        import pyseccomp
    except ImportError as error:
        raise RuntimeError(f"the Python package pyseccomp is missing ({error}): pip install pyseccomp") from None
    except (RuntimeError, OSError) as error:  # pyseccomp loads libseccomp.so.2 as it is imported
        raise RuntimeError(f"libseccomp.so.2 not found ({error}): {INSTALL}") from None
    return pyseccomp


def _flags_argument(seccomp, arch: int) -> int:
    """Which argument of clone holds its flags: the first, except on s390 and s390x (see clone(2))."""
    return 1 if arch in (seccomp.Arch.S390, seccomp.Arch.S390X) else 0


def build(arch: str = "native"):
    """The filter as a ``pyseccomp.SyscallFilter`` for ``arch``: ``'native'`` or a name from
    ``pyseccomp.Arch`` (``'x86_64'``, ``'aarch64'``, ...). ``RuntimeError`` where libseccomp is missing
    or does not know one of the syscalls it must deny."""
    if not isinstance(arch, str):
        raise TypeError(f"arch must be a str such as 'native' or 'x86_64', not {type(arch).__name__}")
    seccomp = _binding()
    if not hasattr(seccomp.Arch, arch.upper()):
        raise ValueError(f"arch must be 'native' or an architecture libseccomp knows (x86_64, aarch64), not {arch!r}")
    token = getattr(seccomp.Arch, arch.upper())
    number = seccomp.system_arch() if token == seccomp.Arch.NATIVE else token
    for name in DENIED:
        if seccomp.resolve_syscall(number, name) < 0:
            raise RuntimeError(f"this libseccomp does not know the syscall {name}: 2.5 or newer is needed; {INSTALL}")
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    if number != seccomp.system_arch():  # another machine's filter, to read (describe)
        rules.add_arch(token)
        rules.remove_arch(seccomp.Arch.NATIVE)
    rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ERRNO(errno.EPERM))

    def newuser(argument: int):  # the flags in that argument include CLONE_NEWUSER
        return seccomp.Arg(argument, seccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)

    rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", newuser(_flags_argument(seccomp, number)))
    rules.add_rule(seccomp.ERRNO(errno.EPERM), "unshare", newuser(0))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    return rules


def _export(rules, how: str) -> bytes:
    with tempfile.TemporaryFile() as handle:
        getattr(rules, how)(handle)
        handle.seek(0)
        return handle.read()


def bpf_program() -> bytes:
    """The native filter compiled to a classic BPF program, as ``bwrap --seccomp`` reads it."""
    return _export(build(), "export_bpf")


def describe(arch: str = "native") -> str:
    """libseccomp's readable listing (PFC) of the filter for ``arch``."""
    return _export(build(arch), "export_pfc").decode()


def policy_problem() -> str | None:
    """Why the filter cannot be built here, or ``None``."""
    try:
        bpf_program()
    except RuntimeError as error:
        return str(error)
    return None

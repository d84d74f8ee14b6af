"""The MaxText oracle's driver: a script rcpc runs, in a subprocess, with the Python interpreter
the user names and MaxText's package on ``PYTHONPATH`` (:mod:`rcpc.oracle`). rcpc never imports
it (it imports MaxText, jax and pydantic); it imports nothing of rcpc (the user's interpreter
may not have rcpc).

It runs MaxText's own config loader, ``maxtext.configs.pyconfig.initialize(argv)``, on each
case it is given, and then, for a case that names a slice, MaxText's mesh creation
(``maxtext.utils.maxtext_utils.create_device_mesh``), on the CPU devices the process was
started with (``XLA_FLAGS=--xla_force_host_platform_device_count=N``, ``JAX_PLATFORMS=cpu``).

The CPU backend is made before the first case, with this process's ``XLA_FLAGS``; each case
then runs with the environment the launch gives MaxText (its ``M_`` variables and its own
``XLA_FLAGS`` or none, which MaxText's loader reads: ``validate_and_set_hlo_dump_defaults``).

Input (stdin, JSON): ``{"slices": S, "cases": [{"argv": [token, ...], "env": {"M_KEY":
"text", "XLA_FLAGS": "text"}, "mesh": bool}, ...]}``. Output (the file descriptor named by ``argv[1]``), one JSON
line per case in order: ``{"ok": true}``, or ``{"ok": false, "type": exception class,
"message": str(exception), "locs": [pydantic error locations]}``; a first line
``{"startup": "..."}`` instead when MaxText cannot be imported. MaxText's own output (logs,
prints) goes to stderr.

What cannot run here is stubbed, all of it in :data:`STUBS` and nowhere else:

* multi-host start-up: ``max_utils.maybe_initialize_jax_distributed_system``
  (``jax.distributed.initialize`` waits for a coordinator that does not exist here) does nothing;
* TPU slice indices: ``elastic_utils.live_slice_indices`` (what ``max_utils.get_num_slices``
  counts slices with) returns the S slices of the case, and the devices handed to mesh
  creation carry a ``slice_index`` (``create_hybrid_device_mesh`` groups devices by it; CPU
  devices have none), device ``i`` in slice ``i // (N / S)``;
* the end of a failed start: ``pyconfig._handle_config_exception`` (which writes
  ``/dev/termination-log`` for Kubernetes and exits the process) re-raises the refusal, so
  that the next case runs.
"""

import json
import logging
import os
import sys


class _SliceDevice:
    """A jax device that says which TPU slice it is in (``slice_index``); everything else is
    the device's own."""

    def __init__(self, device, slice_index):
        self._device, self.slice_index = device, slice_index

    def __getattr__(self, name):
        return getattr(self._device, name)

    def __repr__(self):
        return f"{self._device!r}@slice{self.slice_index}"


def _no_distributed_start(*args, **kwargs):
    return None


def _reraise(exc):
    raise exc


def _stub(slices):
    """Install :data:`STUBS` for a run of ``slices`` slices."""
    from maxtext.configs import pyconfig
    from maxtext.utils import elastic_utils, max_utils

    max_utils.maybe_initialize_jax_distributed_system = _no_distributed_start
    elastic_utils.live_slice_indices = lambda config=None: set(range(slices))
    pyconfig._handle_config_exception = _reraise


STUBS = ("max_utils.maybe_initialize_jax_distributed_system", "elastic_utils.live_slice_indices",
         "devices' slice_index", "pyconfig._handle_config_exception")


def _mesh(config, slices, make):
    import jax

    devices = jax.devices()
    per = max(1, len(devices) // max(1, slices))
    make(config, [_SliceDevice(d, i // per) for i, d in enumerate(devices)])


def _run(case, slices, pyconfig, make):
    saved = dict(os.environ)
    try:
        # the backend is up with this process's device count; the loader sees the launch's env only
        os.environ.pop("XLA_FLAGS", None)
        os.environ.update(case.get("env") or {})
        config = pyconfig.initialize(["", *case["argv"]])
        if case.get("mesh"):
            _mesh(config, slices, make)
        return {"ok": True}
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - every refusal is the answer
        locs = []
        errors = getattr(exc, "errors", None)
        if callable(errors):
            try:
                locs = [[str(p) for p in e.get("loc", ())] for e in errors()]
            except Exception:  # noqa: BLE001
                locs = []
        return {"ok": False, "type": type(exc).__name__, "message": str(exc), "locs": locs}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main():
    out = os.fdopen(int(sys.argv[1]), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever MaxText prints goes to stderr, never into the results
    job = json.load(sys.stdin)
    slices = int(job.get("slices", 1))

    logging.disable(logging.WARNING)
    make = None
    try:
        from maxtext.configs import pyconfig

        _stub(slices)
        if "jax" in sys.modules:  # MaxText's loader imported it: its CPU backend is made now, with
            sys.modules["jax"].devices()  # this process's XLA_FLAGS, before any case's env hides them
        if any(case.get("mesh") for case in job["cases"]):
            import jax  # noqa: F401 - what mesh creation needs, imported before the first case
            from maxtext.utils.maxtext_utils import create_device_mesh as make
    except BaseException as exc:  # noqa: BLE001 - reported to rcpc, which explains it
        out.write(json.dumps({"startup": f"{type(exc).__name__}: {exc}"}) + "\n")
        out.flush()
        return 3
    for case in job["cases"]:
        out.write(json.dumps(_run(case, slices, pyconfig, make)) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

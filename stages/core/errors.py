"""Exception types the harness raises. Bad input is a TypeError/ValueError (see contract.py)."""


class UnsupportedDevice(RuntimeError):
    """This machine cannot run a stage: no GPU, no CuPy, or a GPU too old for the stage.

    The CLI turns it into a one-line "skipped: ..." instead of a traceback.
    """


class CompileError(RuntimeError):
    """NVRTC rejected a kernel; the message carries the compiler log."""

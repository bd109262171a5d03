"""CPU -> device -> CPU round trips for every dtype, as a standalone check.

Usage: python tests/device_check.py [cuda|cuda:N|mps|cpu]   (default: cuda)

Saves one tensor of every safetensors dtype with validator.save, loads it
with validator.open(framework="torch", device=...), copies it back to the CPU
and compares the bytes.  Dtypes the capability table says the device cannot
hold must be refused with DeviceError.  Prints a dtype x result table and
exits 1 if any dtype fails, 2 if the device is not available.
"""

# Strategy: one flat loop, no pytest, so that a lead can run it on a GPU
# machine in seconds; the same checks run under pytest in test_devices.py.
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import validator
from validator._dtypes import DTYPE_BITS, DTYPES
from validator.io.devices import parse_device, platform_facts, unsupported_reason


def main() -> int:
    device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
    import torch

    kind, _ = parse_device(device)
    started = time.perf_counter()
    tensors: dict[str, tuple[str, list[int], bytes]] = {}
    for dtype in DTYPES:
        bits = DTYPE_BITS[dtype]
        numel = 8 * 1024  # whole bytes for every width
        nbytes = numel * bits // 8
        data = bytes(range(256)) * (nbytes // 256) + bytes(nbytes % 256)
        if dtype == "BOOL":
            data = bytes(i % 2 for i in range(nbytes))
        tensors[dtype] = (dtype, [numel // 64, 64], data)
    rows = []
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "every_dtype.safetensors"
        validator.save(tensors, path)
        try:
            handle = validator.open(path, framework="torch", device=device)
        except validator.DeviceError as exc:
            print(f"device {device!r} is not available: {exc}")
            return 2
        with handle:
            for dtype, (_, _, data) in tensors.items():
                expected = unsupported_reason(kind, dtype, platform_facts(kind)) if DTYPE_BITS[dtype] % 8 == 0 else None
                try:
                    t = handle.get(dtype)
                    on = str(t.device)
                    back = t.cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
                    if expected is not None:
                        result, ok = f"LOADED but table says: {expected}", False
                    elif back != data:
                        result, ok = f"MISMATCH on {on}", False
                    elif t.device.type != kind:
                        result, ok = f"WRONG DEVICE {on}", False
                    else:
                        result, ok = f"bit-exact ({t.dtype}, {on})", True
                except validator.DeviceError as exc:
                    ok = expected is not None
                    result = f"refused as documented: {expected}" if ok else f"REFUSED unexpectedly: {exc}"
                except Exception as exc:  # noqa: BLE001 - report every failure in the table
                    result, ok = f"ERROR {type(exc).__name__}: {exc}", False
                failed += not ok
                rows.append((dtype, "ok" if ok else "FAIL", result))
    width = max(len(r[0]) for r in rows)
    print(f"device {device} (torch {torch.__version__}), {time.perf_counter() - started:.1f}s")
    for dtype, status, result in rows:
        print(f"{dtype:<{width}}  {status:<4}  {result}")
    print(f"{len(rows) - failed}/{len(rows)} ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

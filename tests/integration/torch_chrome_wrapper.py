"""Runs a training script under torch.profiler (CPU activities, everything
recorded as one window, as ptprof records by default) and writes torch's own
Chrome trace (export_chrome_trace): the reference of test_export_torch_args.

    python torch_chrome_wrapper.py [--record-shapes] --out trace.json -- script.py [args...]
"""

import argparse
import os
import runpy
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--record-shapes", action="store_true")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args()

    from torch.profiler import ProfilerActivity, profile

    script = os.path.abspath(args.script)
    sys.argv = [script] + list(args.script_args)
    sys.path.insert(0, os.path.dirname(script))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=args.record_shapes) as prof:
        runpy.run_path(script, run_name="__main__")
    prof.export_chrome_trace(args.out)


if __name__ == "__main__":
    main()

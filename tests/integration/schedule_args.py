"""The schedule options the reference wrappers (torch_profile_wrapper.py,
rf_count_wrapper.py) share: --wait/--warmup/--active/--repeat/--skip-first,
with torch.profiler.schedule's defaults."""


def add_schedule_args(parser):
    for name in ("wait", "warmup", "active", "repeat", "skip-first"):
        parser.add_argument("--" + name, type=int, default=None)


def schedule_from_args(args):
    """The schedule as a dict of torch.profiler.schedule's arguments, or None
    when no option was given (everything is one window)."""
    if all(v is None for v in (args.wait, args.warmup, args.active, args.repeat, args.skip_first)):
        return None
    return {
        "skip_first": args.skip_first or 0,
        "wait": args.wait or 0,
        "warmup": args.warmup or 0,
        "active": args.active if args.active is not None else 1,
        "repeat": args.repeat or 0,
    }

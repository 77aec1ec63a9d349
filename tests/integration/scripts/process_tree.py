"""A process tree that runs aten ops in every process, each with ops of its
own so that a test can tell who ran what:

- the main process: aten::mm (MAIN_MM times), then a DataLoader with two
  workers whose dataset runs aten::cumsum once per item (ITEMS items, batches
  of 2: worker i gets batches i, i+2, ..., so ITEMS/2 items each);
- a multiprocessing 'spawn' child: aten::cumprod (SPAWN_OPS times);
- a 'forkserver' child: aten::flip (FORKSERVER_OPS times);
- a subprocess (exec of the interpreter): aten::tril (EXEC_OPS times).

Every process appends "<role> <pid>" to the file named by argv[1].
"""

import multiprocessing as mp
import os
import subprocess
import sys

import torch

ITEMS = 8
MAIN_MM = 5
SPAWN_OPS = 3
FORKSERVER_OPS = 4
EXEC_OPS = 6


def note(path, role):
    with open(path, "a") as f:
        f.write("%s %d\n" % (role, os.getpid()))


class Items(torch.utils.data.Dataset):
    def __len__(self):
        return ITEMS

    def __getitem__(self, i):
        return torch.ones(4).cumsum(0) * i


def worker_init(path):
    def init(worker_id):
        note(path, "worker%d" % worker_id)

    return init


def spawn_child(path):
    note(path, "spawn")
    x = torch.ones(4)
    for _ in range(SPAWN_OPS):
        x = x.cumprod(0)


def forkserver_child(path):
    note(path, "forkserver")
    x = torch.ones(4)
    for _ in range(FORKSERVER_OPS):
        x = x.flip(0)


def main():
    path = sys.argv[1]
    note(path, "main")
    a = torch.ones(8, 8)
    for _ in range(MAIN_MM):
        a = a.mm(a)

    loader = torch.utils.data.DataLoader(Items(), batch_size=2, num_workers=2, worker_init_fn=worker_init(path))
    batches = [b for b in loader]
    assert len(batches) == ITEMS // 2
    del loader

    for method, target in (("spawn", spawn_child), ("forkserver", forkserver_child)):
        p = mp.get_context(method).Process(target=target, args=(path,))
        p.start()
        p.join()
        assert p.exitcode == 0, (method, p.exitcode)

    code = (
        "import os, torch\n"
        "open(%r, 'a').write('exec %%d\\n' %% os.getpid())\n"
        "x = torch.ones(3, 3)\n"
        "for _ in range(%d): x = x.tril()\n" % (path, EXEC_OPS)
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    print("done")


if __name__ == "__main__":
    main()

"""HTA on ptprof's Chrome export of the other recorded GPU runs (issue 54),
as test_gpu_hta.py compares the first four (its functions, imported; its
docstring says what is compared and why): the second rank of the two-rank
job, a training step with collectives and a fused optimizer, AlexNet's
cuda_sync events of every kind, and the V100 trace in the 2021 schema.

torch 2.x only (REQUIRES): HTA reads the export, which the replay makes the
same way under either torch, and these four cost about three minutes; the
replays themselves are compared with the reference on both torches
(test_gpu_replay.py).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptproftest as pt  # noqa: E402
import test_gpu_hta as hta  # noqa: E402

COST_S = 200
REQUIRES = ("torch2",)


def test_other_rank():
    """Rank 1 of the two-rank job: HTA takes the rank from the export's distributedInfo."""
    hta.replay_and_compare("rank1")


def test_training_step():
    """A training step with all-gathers, reduce-scatters and FusedAdam."""
    hta.replay_and_compare("training")


def test_alexnet_cuda_sync():
    """cuda_sync events of every kind, copies and sets."""
    hta.replay_and_compare("alexnet")


def test_kineto_2021_schema():
    """The 2021 schema (Runtime, Kernel, Memcpy and Memset categories)."""
    hta.replay_and_compare("kineto2021")


if __name__ == "__main__":
    pt.main()

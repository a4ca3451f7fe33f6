"""SODM: the optimal margin distribution machine trained on stratified partitions, merged level by level.

Implements the method of Wang, Zhang et al., "Scalable Optimal Margin
Distribution Machine", IJCAI 2023 (arXiv:2305.04837), with Joker's DBCD-TR
(``loss="odm"``) as the solver of every partition and of the final, full
problem. The steps (``docs/sodm.md``):

- :mod:`joker.sodm.partition`: landmarks, strata and the stratified split;
- :mod:`joker.sodm.parallel`: one level's local solves on joblib (loky) or
  Dask distributed;
- :mod:`joker.sodm.driver`: :class:`SODMClassifier`, the levels, the warm
  starts, the final certificate.
"""

__all__ = ["SODMClassifier", "greedy_landmarks", "nearest_landmark", "stratified_split", "map_level"]


def __getattr__(name):
    if name == "SODMClassifier":
        from .driver import SODMClassifier

        return SODMClassifier
    if name in ("greedy_landmarks", "nearest_landmark", "stratified_split"):
        from . import partition

        return getattr(partition, name)
    if name == "map_level":
        from .parallel import map_level

        return map_level
    raise AttributeError(f"module 'joker.sodm' has no attribute {name!r}")

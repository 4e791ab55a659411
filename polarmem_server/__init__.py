"""PolarMem: a polarised (HAS / NOT_HAS / UNCERTAIN) memory for vision-language agents."""

from polarmem_server.index import Index, SearchHits, SpaceSpec, build_info

__all__ = ["Index", "SearchHits", "SpaceSpec", "build_info"]
__version__ = "0.1.0"

"""Corpus preparation: deduplication, group-isolated splits, dataset encoding (local and Ray).
(Room for the corpus issue; nothing lives here yet.)"""

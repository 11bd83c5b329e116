"""Artifact identity: canonical hashes, manifests, bundle reconcile, golden cases, the doctor.
(Room for the artifacts issue; nothing lives here yet.)"""

"""The HTTP token service (`tinyllm serve`) and its playground page.
(Room for the service issue; nothing lives here yet.)"""

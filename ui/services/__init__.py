"""The parts of :class:`ui.service.UiService`, one concern each (see ui/service.py)."""

"""The parts of :class:`services.service.AppService`, one concern each (see services/service.py)."""

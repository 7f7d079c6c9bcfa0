"""Reflex UI pieces: functions returning rx.Component, no logic beyond rx.cond/rx.foreach."""

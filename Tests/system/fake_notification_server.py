"""A tiny org.freedesktop.Notifications server for test_notify.py: it owns the name on the
session bus it is given (DBUS_SESSION_BUS_ADDRESS), says it renders body markup (the
case where unescaped text from a peer would be dangerous), and appends every Notify call
as one JSON line to the file named by its first argument. Needs python3-dbus and
python3-gi (Debian), so run under /usr/bin/python3."""
import json
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

RECORD = sys.argv[1]


class Server(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, "/org/freedesktop/Notifications")
        self.next_id = 1

    @dbus.service.method("org.freedesktop.Notifications", in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout):
        if replaces_id:
            nid = int(replaces_id)
        else:
            nid = self.next_id
            self.next_id += 1
        with open(RECORD, "a") as f:
            f.write(json.dumps({"app_name": str(app_name), "replaces_id": int(replaces_id), "id": nid,
                                "summary": str(summary), "body": str(body),
                                "hints": {str(k): str(v) for k, v in hints.items()}}) + "\n")
        return dbus.UInt32(nid)

    @dbus.service.method("org.freedesktop.Notifications", out_signature="as")
    def GetCapabilities(self):
        return ["body", "body-markup", "body-hyperlinks", "body-images"]

    @dbus.service.method("org.freedesktop.Notifications", out_signature="ssss")
    def GetServerInformation(self):
        return ("fake", "parley-tests", "1", "1.2")


DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
name = dbus.service.BusName("org.freedesktop.Notifications", bus, do_not_queue=True)
server = Server(bus)
print("ready", flush=True)
GLib.MainLoop().run()

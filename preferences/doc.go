// Package preferences is the pure model of a subscriber's notification
// preferences (CONTRACT §11): the document a subscriber's preferences
// form, the PATCH merge that changes it, and the resolution that decides
// whether one send goes out.
//
// # Basics
//
// A [Doc] holds only what was set: per channel kind a global switch
// (Channels), and per workflow an optional Enabled switch and per-kind
// switches (Workflows). [Patch] merges a PATCH body into a Doc down to the
// leaves: a value sets, null removes the key at any level. [Allows] is the
// resolution order: a critical workflow always sends; a workflow the
// subscriber disabled never does; else the first value set among the
// subscriber's workflow channel, the subscriber's channel and the
// workflow's default decides, and with none set the send goes out.
//
// # Caveats
//
// The package validates shapes and bounds, not existence: a workflow id
// need not be synced yet (a preference may precede the workflow).
// Everything here is a pure function of its arguments.
package preferences

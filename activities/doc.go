// Package activities does all I/O on behalf of the workflows: one
// Activities struct holds the pool, the handler registry, provider clients
// and the resource signaller, with one method per activity. Each activity
// runs short database transactions and never holds one open across a network
// call. Business handlers plug in through the Handler interface.
package activities

package admission

// MissLookups is missLookups, for the tests of the slug-flood guard.
const MissLookups = missLookups

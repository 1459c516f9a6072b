// What the archive import's route states of it without loading it: the
// import itself loads at its first use.

/** The limits of an archive, as the contract sets them. */
export const MAX_ENTRIES = 100_000
export const MAX_RATIO = 4

/** The lists of records every archive has; archives written before a later kind existed have none of it. */
export const ALWAYS_LISTED: string[] = ['measurements', 'visits', 'medicalEvents', 'illnesses']

export interface Gestation {
  gestationalAgeAtBirthWeeks?: number | null
  gestationalAgeAtBirthDays?: number | null
}

/** Days of gestation are only given with its weeks: the issue when they are not, or null. */
export function gestationIssue (child: Gestation): { path: string, message: string } | null {
  if (child.gestationalAgeAtBirthDays != null && child.gestationalAgeAtBirthWeeks == null) {
    return { path: '/body/gestationalAgeAtBirthDays', message: 'must be null when gestationalAgeAtBirthWeeks is' }
  }
  return null
}

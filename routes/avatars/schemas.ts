import { Type } from '@sinclair/typebox'
import { Id, StrictObject } from '../../lib/schemas'

export const AvatarParams = StrictObject({ id: Id })

/** The multipart body of an avatar upload. */
export const UploadAvatarBody = StrictObject({
  file: Type.String({ format: 'binary', description: 'JPEG, PNG or WebP, at most MAX_FILE_SIZE bytes' })
})

export const Avatar = Type.Object({
  avatarUrl: Type.String({ description: 'root-relative, /avatars/<name>; a capability link that needs no token' })
}, { title: 'Avatar' })

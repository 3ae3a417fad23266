import { Type, type Static } from '@sinclair/typebox';

/** Pterodactyl's RenameServerRequest: the server's name rules (required, 1 to 191 characters), a free description. */
export const RenameServerBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 191 }),
  description: Type.Optional(Type.String({ maxLength: 65535 })),
});

export type RenameServerInput = Static<typeof RenameServerBody>;

/** Pterodactyl's SetDockerImageRequest: required, at most 191 characters; one of the egg's images (checked in the service). */
export const DockerImageBody = Type.Object({
  docker_image: Type.String({ minLength: 1, maxLength: 191 }),
});

export type DockerImageInput = Static<typeof DockerImageBody>;

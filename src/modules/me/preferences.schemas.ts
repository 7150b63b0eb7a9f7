import { Type, type Static } from 'typebox';
import { Envelope, Uuid } from '../../platform/http/schemas.ts';

export const PreferencesQuery = Type.Object({ organization_uid: Type.Optional(Uuid) });
export type PreferencesQueryT = Static<typeof PreferencesQuery>;

export const PatchPreferencesBody = Type.Object(
  {
    organization_uid: Type.Optional(Uuid),
    approval_emails: Type.Boolean({
      description: 'Email me each approval request of this organization, with a link to decide it',
    }),
  },
  { additionalProperties: false },
);
export type PatchPreferencesBodyT = Static<typeof PatchPreferencesBody>;

/** My settings in one organization (docs/approval-emails.md#who-gets-them). */
export const Preferences = Type.Object({
  organization_uid: Uuid,
  organization_name: Type.String(),
  approval_emails: Type.Boolean({
    description: 'Approval requests of this organization come to me by email (default false)',
  }),
});
export type PreferencesT = Static<typeof Preferences>;

export const PreferencesEnvelope = Envelope(Preferences);

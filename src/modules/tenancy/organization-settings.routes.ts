import { Type } from 'typebox';
import { envelope } from '../../platform/http/envelope.ts';
import {
  amountCents,
  DateTime,
  Envelope,
  errorResponses,
  Nullable,
  Uuid,
} from '../../platform/http/schemas.ts';
import type { App, AppDeps } from '../../platform/http/types.ts';
import { SEARCH_LANGUAGES } from '../../platform/db/text-search.ts';
import * as service from './organization-settings.service.ts';

const Params = Type.Object({ organization_uid: Uuid });
const LimitCents = Nullable(amountCents(0, { description: 'cents; null: unlimited' }));
const ApprovalLimits = Type.Object(
  {
    roles: Type.Object({ admin: LimitCents, member: LimitCents }),
    users: Type.Array(Type.Object({ user_uid: Uuid, limit_cents: LimitCents })),
  },
  {
    description:
      'The largest invoice total (cents, any currency) each role, or each named user instead of their role, may approve on a payable. Null: unlimited. Default: no limits',
  },
);
const ApprovalLimitsInput = Type.Object(
  {
    roles: Type.Optional(
      Type.Object(
        { admin: Type.Optional(LimitCents), member: Type.Optional(LimitCents) },
        { additionalProperties: false },
      ),
    ),
    users: Type.Optional(
      Type.Array(Type.Object({ user_uid: Uuid, limit_cents: LimitCents }, { additionalProperties: false }), {
        maxItems: 200,
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Replaces the whole setting: a role left out is unlimited, and `users` (members of the organization, each once; at most 200) replaces the list',
  },
);
const SearchLanguage = Type.Enum([...SEARCH_LANGUAGES], {
  description:
    'The PostgreSQL text search configuration knowledge and documents are indexed and searched in ' +
    "(stemming, stop words); `simple`: no stemming. Changing it re-indexes the organization's texts.",
});
const Settings = Type.Object({
  organization_uid: Uuid,
  segregation_of_duties: Type.Boolean({
    description: 'When true, the user who entered a payable cannot also approve it (admins included)',
  }),
  require_admin_mfa: Type.Boolean({
    description: 'When true, admins signed in with a session act here only with a second factor (TOTP)',
  }),
  slack_channel_id: Nullable(
    Type.String({
      description:
        "The organization's default Slack channel: agents without a notification_config post there. Null: none",
    }),
  ),
  slack_configured: Type.Boolean({
    description:
      'Whether this deployment posts to Slack at all (SLACK_BOT_TOKEN is set); read only, from the configuration',
  }),
  approval_limits: ApprovalLimits,
  address: Type.String({
    description:
      "The organization's postal address as printed on its invoices' PDFs (lines separated by \\n)",
  }),
  tax_id: Nullable(Type.String({ description: 'The tax id printed on invoice PDFs; null: none' })),
  payment_instructions: Type.String({
    description: 'How to pay (bank account, reference to quote), printed on invoice PDFs and hosted pages',
  }),
  search_language: SearchLanguage,
  updated_at: DateTime,
});
const PatchBody = Type.Object(
  {
    segregation_of_duties: Type.Optional(Type.Boolean()),
    require_admin_mfa: Type.Optional(Type.Boolean()),
    slack_channel_id: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 255,
          description:
            'A Slack channel id (e.g. C0123ABCD) the bot is a member of, checked with Slack when it is configured; null clears it',
        }),
      ),
    ),
    approval_limits: Type.Optional(ApprovalLimitsInput),
    address: Type.Optional(Type.String({ maxLength: 500 })),
    tax_id: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    payment_instructions: Type.Optional(Type.String({ maxLength: 2000 })),
    search_language: Type.Optional(SearchLanguage),
  },
  { additionalProperties: false },
);

export async function organizationSettingsRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const { chat } = deps.clients;
  const tags = ['Organization'];
  app.get(
    '/api/organization/:organization_uid/settings',
    {
      schema: {
        operationId: 'getOrganizationSettings',
        tags,
        summary:
          "The organization's settings (segregation of duties, second factor for admins, default Slack channel, approval limits)",
        params: Params,
        response: { 200: Envelope(Settings), ...errorResponses },
      },
      config: { scope: 'organization:read', errors: ['not_found'] },
    },
    async (request) =>
      envelope(
        await service.getOrganizationSettings(db, request.tenant(request.params.organization_uid), chat),
        'Organization settings',
      ),
  );
  app.patch(
    '/api/organization/:organization_uid/settings',
    {
      schema: {
        operationId: 'updateOrganizationSettings',
        tags,
        summary: "Change the organization's settings (admins)",
        params: Params,
        body: PatchBody,
        response: { 200: Envelope(Settings), ...errorResponses },
      },
      // An admin-only scope: a member's call is 403 `missing_scope` (docs/authentication.md#roles).
      config: { scope: 'organization:write', errors: ['not_found', 'bad_gateway', 'gateway_timeout'] },
    },
    async (request) =>
      envelope(
        await service.updateOrganizationSettings(
          db,
          request.tenant(request.params.organization_uid),
          chat,
          request.body,
        ),
        'Organization settings updated',
      ),
  );
}

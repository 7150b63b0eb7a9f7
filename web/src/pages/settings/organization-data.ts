import { useCallback, useEffect, useState } from 'react';
import type { SuccessBody } from '@remit/client';
import { problemOf, RemitApiError } from '../../api.ts';
import { useSignedIn } from '../../session.tsx';

/** `GET /api/organization/{uid}/settings`: the switches, the default Slack channel, `slack_configured`. */
export type OrganizationSettings = SuccessBody<
  'get',
  '/api/organization/{organization_uid}/settings'
>['data'];

export type Loaded<T> =
  | { status: 'loading' }
  | { status: 'error'; message: string; code: string | undefined }
  | { status: 'ready'; data: T };

/**
 * The organization's settings, read when the section opens (never from a cache: another admin may have
 * changed them), and replaced by what a PATCH answers.
 */
export function useOrganizationSettings() {
  const { client, organization } = useSignedIn();
  const organizationUid = organization.organization_uid;
  const [state, setState] = useState<Loaded<OrganizationSettings>>({ status: 'loading' });
  const load = useCallback(async () => {
    setState({ status: 'loading' });
    try {
      const { data } = await client.GET('/api/organization/{organization_uid}/settings', {
        params: { path: { organization_uid: organizationUid } },
      });
      setState({ status: 'ready', data });
    } catch (error) {
      setState({ status: 'error', message: problemOf(error), code: codeOf(error) });
    }
  }, [client, organizationUid]);
  useEffect(() => {
    void load();
  }, [load]);

  /** Sends only `changes`; answers the settings as saved (or throws the API's error). */
  const update = useCallback(
    async (changes: {
      segregation_of_duties?: boolean;
      require_admin_mfa?: boolean;
      slack_channel_id?: string | null;
    }) => {
      const { data } = await client.PATCH('/api/organization/{organization_uid}/settings', {
        params: { path: { organization_uid: organizationUid } },
        body: changes,
      });
      setState({ status: 'ready', data });
      return data;
    },
    [client, organizationUid],
  );
  return { state, reload: load, update };
}

const codeOf = (error: unknown) => (error instanceof RemitApiError ? error.code : undefined);

/** The API's field errors (422) by field, for the inputs they belong to. */
export function fieldErrorsOf(error: unknown): Record<string, string> {
  if (!(error instanceof RemitApiError)) return {};
  return Object.fromEntries(error.errors.map((e) => [e.field.replace(/^(body\/|\/)/, ''), e.message]));
}

export const isAdmin = (role: string) => role === 'admin';

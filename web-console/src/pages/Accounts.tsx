import { PageHeader } from '../components/States';

export default function Accounts() {
  return <PageHeader title="Accounts" />;
}
